// repeat, flip, roll and unbind: copies (or views) that move elements
// around, composed from views, index_select and cat so that autograd records
// them piece by piece and they run on every device.
#include <algorithm>

#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/indexing.h"
#include "core/ops/shape.h"

namespace anvil {

namespace {

// PyTorch's rearranging ops always return new memory, even when nothing moved.
Tensor fresh(const Tensor& result, const Tensor& input) {
  return result.storage() == input.storage() ? result.clone() : result;
}

// dims wrapped to [0, x.dim()), each at most once, or an error naming op.
Shape distinct_dims(const char* op, const Tensor& x, const Shape& dims) {
  Shape wrapped;
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, x.dim(), op);
    ANVIL_CHECK(std::find(wrapped.begin(), wrapped.end(), w) == wrapped.end(), op, ": dim ", w,
                " appears more than once in dims ", dims, " (input shape ", x.shape(), ")");
    wrapped.push_back(w);
  }
  return wrapped;
}

}  // namespace

Tensor repeat(const Tensor& x, const Shape& repeats) {
  detail::check_defined("repeat", x, "input");
  ANVIL_CHECK(static_cast<int64_t>(repeats.size()) >= x.dim(), "repeat: ", repeats.size(), " repeat counts ", repeats,
              " for a tensor of shape ", x.shape(), "; expected at least one per dim (", x.dim(), ")");
  for (int64_t r : repeats) ANVIL_CHECK(r >= 0, "repeat: repeat counts must be non-negative, got ", repeats);
  // [a, b] repeated [r, s]: view as [1, a, 1, b], expand to [r, a, s, b] and
  // merge each pair: the copy happens in the final reshape.
  const size_t lead = repeats.size() - static_cast<size_t>(x.dim());
  Shape interleaved, expanded, result;
  for (size_t i = 0; i < repeats.size(); ++i) {
    const int64_t size = i < lead ? 1 : x.shape()[i - lead];
    interleaved.insert(interleaved.end(), {1, size});
    expanded.insert(expanded.end(), {repeats[i], size});
    result.push_back(repeats[i] * size);
  }
  return fresh(x.reshape(interleaved).expand(expanded).reshape(result), x);
}

Tensor flip(const Tensor& x, const Shape& dims) {
  detail::check_defined("flip", x, "input");
  Tensor out = x;
  for (int64_t d : distinct_dims("flip", x, dims)) {
    const int64_t n = x.shape()[d];
    if (n <= 1) continue;
    const Tensor reversed = arange(n - 1, int64_t{-1}, int64_t{-1}, TensorOptions(kInt64).device(x.device()));
    out = index_select(out, d, reversed);
  }
  return fresh(out, x);
}

Tensor roll(const Tensor& x, const Shape& shifts, const Shape& dims) {
  detail::check_defined("roll", x, "input");
  if (dims.empty()) {
    ANVIL_CHECK(shifts.size() == 1, "roll: without dims, expected one shift (of the flattened tensor), got ", shifts);
    return roll(x.flatten(), shifts, {0}).view(x.shape());
  }
  ANVIL_CHECK(shifts.size() == dims.size(), "roll: got ", shifts.size(), " shifts ", shifts, " but ", dims.size(),
              " dims ", dims, "; expected one shift per dim");
  const Shape wrapped = distinct_dims("roll", x, dims);
  Tensor out = x;
  for (size_t i = 0; i < wrapped.size(); ++i) {
    const int64_t d = wrapped[i], n = x.shape()[d];
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;  // a shift in [0, n), also for negative ones
    if (s != 0) out = cat({out.narrow(d, n - s, s), out.narrow(d, 0, n - s)}, d);
  }
  return fresh(out, x);
}

std::vector<Tensor> unbind(const Tensor& x, int64_t dim) {
  detail::check_defined("unbind", x, "input");
  ANVIL_CHECK(x.dim() > 0, "unbind: cannot unbind a 0-d tensor");
  const int64_t d = wrap_dim(dim, x.dim(), "unbind");
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(x.shape()[d]));
  for (int64_t i = 0; i < x.shape()[d]; ++i) out.push_back(x.select(d, i));
  return out;
}

}  // namespace anvil
