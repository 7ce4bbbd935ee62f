// pixel_shuffle / pixel_unshuffle: a reshape, a permute and a copy, so both
// backends run them and the gradient is the inverse rearrangement.
#include "core/dispatch.h"
#include "core/ops/nn_functional.h"

namespace anvil {

namespace {

// The leading dims of x [*, C, H, W] folded into one, so the rearrangement is written once.
Tensor as_batched_images(const char* op, const Tensor& x) {
  detail::check_defined(op, x, "input");
  ANVIL_CHECK(x.dim() >= 3, op, ": expected input [*, C, H, W] (at least 3 dims), got ", detail::describe(x));
  return x.reshape({-1, x.size(-3), x.size(-2), x.size(-1)});
}

Shape with_image_dims(const Tensor& x, int64_t c, int64_t h, int64_t w) {
  Shape s(x.shape().begin(), x.shape().end() - 3);
  s.insert(s.end(), {c, h, w});
  return s;
}

}  // namespace

Tensor pixel_shuffle(const Tensor& x, int64_t r) {
  constexpr const char* kOp = "pixel_shuffle";
  ANVIL_CHECK(r >= 1, kOp, ": expected upscale_factor >= 1, got ", r);
  Tensor b = as_batched_images(kOp, x);
  const int64_t n = b.size(0), c = b.size(1), h = b.size(2), w = b.size(3);
  ANVIL_CHECK(c % (r * r) == 0, kOp, ": the channels (", c, " in ", x.shape_str(),
              ") must be divisible by upscale_factor^2 = ", r * r);
  const int64_t oc = c / (r * r);
  Tensor y = b.reshape({n, oc, r, r, h, w}).permute({0, 1, 4, 2, 5, 3}).reshape({n, oc, h * r, w * r});
  return y.reshape(with_image_dims(x, oc, h * r, w * r));
}

Tensor pixel_unshuffle(const Tensor& x, int64_t r) {
  constexpr const char* kOp = "pixel_unshuffle";
  ANVIL_CHECK(r >= 1, kOp, ": expected downscale_factor >= 1, got ", r);
  Tensor b = as_batched_images(kOp, x);
  const int64_t n = b.size(0), c = b.size(1), h = b.size(2), w = b.size(3);
  ANVIL_CHECK(h % r == 0 && w % r == 0, kOp, ": the height and width (", h, ", ", w, " in ", x.shape_str(),
              ") must be divisible by downscale_factor ", r);
  Tensor y = b.reshape({n, c, h / r, r, w / r, r}).permute({0, 1, 3, 5, 2, 4}).reshape({n, c * r * r, h / r, w / r});
  return y.reshape(with_image_dims(x, c * r * r, h / r, w / r));
}

}  // namespace anvil
