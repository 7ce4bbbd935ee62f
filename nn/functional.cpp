#include "nn/functional.h"

#include <cmath>
#include <vector>

#include "core/factory.h"
#include "core/ops/linalg.h"

namespace anvil::nn::functional {

namespace {

// Adaptive average along one dim: a reshape + mean when the windows tile the
// dim exactly, else one mean per (possibly overlapping) window.
Tensor adaptive_mean_along(const Tensor& x, int64_t dim, int64_t out) {
  const int64_t in = x.size(dim);
  if (in % out == 0) {
    Shape split = x.shape();
    split[dim] = out;
    split.insert(split.begin() + dim + 1, in / out);
    return x.reshape(split).mean({dim + 1});
  }
  std::vector<Tensor> cells;
  cells.reserve(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const int64_t start = i * in / out, end = ((i + 1) * in + out - 1) / out;
    cells.push_back(x.narrow(dim, start, end - start).mean({dim}, true));
  }
  return cat(cells, dim);
}

Tensor reduce(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return loss.sum();
    case Reduction::Mean:
      return loss.mean();
  }
  return loss;
}

void check_same_shape(const char* op, const Tensor& input, const Tensor& target) {
  ANVIL_CHECK(input.defined() && target.defined() && input.shape() == target.shape(), op,
              ": expected input and target of the same shape, got ",
              input.defined() ? input.shape_str() : std::string("undefined"), " and ",
              target.defined() ? target.shape_str() : std::string("undefined"));
}

}  // namespace

// Two views of x and two ops, so the gradient comes from narrow, sigmoid and mul.
Tensor glu(const Tensor& x, int64_t dim) {
  ANVIL_CHECK(x.defined() && x.dim() > 0, "glu: expected a tensor with at least one dim, got ",
              x.defined() ? "a 0-d tensor" : "an undefined tensor");
  const int64_t d = wrap_dim(dim, x.dim(), "glu");
  const int64_t size = x.size(d);
  ANVIL_CHECK(size % 2 == 0, "glu: halving dimension must be even, but dimension ", d, " is size ", size, " (input ",
              x.shape_str(), ")");
  return x.narrow(d, 0, size / 2) * sigmoid(x.narrow(d, size / 2, size / 2));
}

Tensor adaptive_avg_pool2d(const Tensor& x, Size2 output_size) {
  ANVIL_CHECK(x.defined() && (x.dim() == 3 || x.dim() == 4) && x.size(-1) > 0 && x.size(-2) > 0,
              "adaptive_avg_pool2d: expected non-empty input [N, C, H, W] or [C, H, W], got ",
              x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  ANVIL_CHECK(output_size.h > 0 && output_size.w > 0, "adaptive_avg_pool2d: expected a positive output_size, got ",
              output_size.str());
  const int64_t h = x.size(-2), w = x.size(-1);
  if (h % output_size.h == 0 && w % output_size.w == 0) {
    // Equal, non-overlapping windows: one fused pooling kernel.
    Pool2dOptions o;
    o.kernel = {h / output_size.h, w / output_size.w};
    o.stride = o.kernel;
    return x.dim() == 3 ? avg_pool2d(x.unsqueeze(0), o).squeeze(0) : avg_pool2d(x, o);
  }
  // The windows are rectangles (a row range times a column range), so the
  // mean over one is the mean over its rows of the mean over its columns.
  const int64_t hdim = x.dim() - 2, wdim = x.dim() - 1;
  return adaptive_mean_along(adaptive_mean_along(x, hdim, output_size.h), wdim, output_size.w);
}

Tensor binary_cross_entropy(const Tensor& probs, const Tensor& target, Reduction reduction) {
  check_same_shape("binary_cross_entropy", probs, target);
  Tensor log_p = clamp(log(probs), -100.0, INFINITY);
  Tensor log_1mp = clamp(log(1.0 - probs), -100.0, INFINITY);
  return reduce(neg(target * log_p + (1.0 - target) * log_1mp), reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_same_shape("l1_loss", input, target);
  return reduce(abs(input - target), reduction);
}

}  // namespace anvil::nn::functional
