// Reductions written with the others (no kernel of their own; both backends
// run them through sum and amax): all, any and logsumexp.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/autocast.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"

namespace anvil {

namespace {

// These ops run through sum and amax; their dims are checked here first so
// that an error names the op the user called, not "sum".
void check_reduce_input(const char* op, const Tensor& x, const Shape& dims) {
  detail::check_defined(op, x, "input");
  const int64_t ndim = x.dim();
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(ndim, 1)), false);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;  // a 0-d tensor reduces to itself
    ANVIL_CHECK(!seen[static_cast<size_t>(w)], op, ": dim ", w, " appears more than once in dims ", dims, " (input ",
                detail::describe(x), ")");
    seen[static_cast<size_t>(w)] = true;
  }
}

}  // namespace

// Counting the zeros (any: the non-zeros) gives the empty cases for free:
// a count of 0 over no elements makes all true and any false.
Tensor all(const Tensor& x, const Shape& dims, bool keepdim) {
  check_reduce_input("all", x, dims);
  return eq(sum(eq(x.detach(), 0), dims, keepdim), 0);
}
Tensor any(const Tensor& x, const Shape& dims, bool keepdim) {
  check_reduce_input("any", x, dims);
  return ne(sum(ne(x.detach(), 0), dims, keepdim), 0);
}

// max + log(sum(exp(x - max))), the max detached (the result does not depend
// on it) and replaced by 0 where it is infinite, so that a slice of -infs
// gives -inf and one holding +inf gives +inf instead of NaN (as PyTorch).
Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim) {
  if (auto cast = autocast::full_precision_inputs(x)) return logsumexp(cast[0], dims, keepdim);
  check_reduce_input("logsumexp", x, dims);
  Tensor in = is_floating(x.dtype()) ? x : x.to(kFloat32);
  if (in.numel() == 0) return log(sum(exp(in), dims, keepdim));  // log(0) = -inf over no elements
  Tensor m = amax(in.detach(), dims, true);
  m = where(isinf(m), scalar_tensor(0, m.options()), m);
  Tensor s = log(sum(exp(in - m), dims, true)) + m;
  return keepdim ? s : sum(s, dims, false);  // drops the kept dims (each of size 1)
}

}  // namespace anvil
