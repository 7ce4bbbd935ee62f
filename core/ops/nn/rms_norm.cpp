// rms_norm: the checks, the kernels or their composed fallback, and the
// gradient. Forward, one kernel pass (kernels/*/rms_norm*); backward, one
// more (which recomputes the row scale from x, so float64 stays exact).
// Where a device has no kernel, both directions are composed from ops — the
// same formulas the create_graph backward uses, so that one is itself
// differentiable (double backward).
#include <limits>

#include "core/autocast.h"
#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/nn/nn_common.h"
#include "core/ops/nn_functional.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"

namespace anvil {

// The kernel ops this file calls, listed in the coverage table whatever this
// build registers for them (a CPU-only build has no add_layer_norm kernel).
ANVIL_DECLARE_KERNEL_OP(kernel::RmsNorm);
ANVIL_DECLARE_KERNEL_OP(kernel::RmsNormBackward);

namespace {

// The normalisation over the last dims of x, from ops.
Tensor composed_rms_norm(const Tensor& x, const Shape& dims, const Tensor& weight, double eps) {
  Tensor y = x * rsqrt(mean(x * x, dims, true) + eps);
  return weight.defined() ? y * weight : y;
}

// Its gradient from ops (grad_in, grad_weight).
nn_detail::Grads composed_backward(const Tensor& g, const Tensor& x, const Tensor& weight, const Shape& dims,
                                   double eps, bool need_x, bool need_w) {
  Tensor r = rsqrt(mean(x * x, dims, true) + eps);
  nn_detail::Grads grads(2);
  if (need_x) {
    Tensor gw = weight.defined() ? g * weight : g;
    grads[0] = r * (gw - x * (r * r) * mean(gw * x, dims, true));
  }
  if (need_w) grads[1] = sum_to(g * x * r, weight.shape());
  return grads;
}

// grad_in and grad_weight from the device's one-pass kernel.
nn_detail::Grads fused_backward(kernel::RmsNormBackward::Signature& run, const Tensor& g, const Tensor& x,
                                const Tensor& weight, double eps, bool need_x, bool need_w, int64_t rows,
                                int64_t cols) {
  nn_detail::Grads grads(2);
  Tensor grad_in = need_x ? empty({rows, cols}, x.options()) : Tensor();
  Tensor grad_w = need_w ? empty({cols}, weight.options()) : Tensor();
  if (rows > 0) {
    View w_slot, gw_slot;
    Tensor w1 = weight.defined() ? weight.reshape({cols}) : Tensor();
    const Tensor g2 = g.to(x.dtype()).reshape({rows, cols});
    run(grad_in.defined() ? grad_in.view_of() : View{}, nn_detail::optional_view(grad_w, gw_slot), g2.view_of(),
        x.reshape({rows, cols}).view_of(), nn_detail::optional_view(w1, w_slot), eps);
  } else if (grad_w.defined()) {
    grad_w.zero_();
  }
  if (need_x) grads[0] = grad_in.view(x.shape());
  if (need_w) grads[1] = grad_w.view(weight.shape());
  return grads;
}

}  // namespace

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  if (auto cast = autocast::full_precision_inputs(x, weight)) return rms_norm(cast[0], normalized_shape, cast[1], eps);
  detail::check_floating("rms_norm", x, "input");
  detail::check_same_device("rms_norm", {x, weight});
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  bool fits = nd >= 1 && nd <= x.dim();
  for (int64_t i = 0; fits && i < nd; ++i) fits = x.size(x.dim() - nd + i) == normalized_shape[i];
  ANVIL_CHECK(fits, "rms_norm: normalized_shape ", normalized_shape, " must be a non-empty suffix of input ",
              detail::describe(x));
  if (weight.defined()) {
    detail::check_floating("rms_norm", weight, "weight");
    ANVIL_CHECK(weight.shape() == normalized_shape, "rms_norm: expected weight ", normalized_shape, ", got ",
                detail::describe(weight));
  }
  Shape dims;
  for (int64_t i = 0; i < nd; ++i) dims.push_back(x.dim() - nd + i);
  // PyTorch's default eps: the dtype's machine epsilon.
  const double e = eps.value_or(x.dtype() == kFloat64    ? std::numeric_limits<double>::epsilon()
                                : x.dtype() == kFloat16  ? 0.0009765625
                                : x.dtype() == kBFloat16 ? 0.0078125
                                                         : static_cast<double>(std::numeric_limits<float>::epsilon()));
  auto* forward = find_kernel<kernel::RmsNorm>(x.device().type);
  if (!forward) return composed_rms_norm(x, dims, weight, e);

  const int64_t cols = numel_of(normalized_shape);
  int64_t row_count = 1;
  for (int64_t d = 0; d < x.dim() - nd; ++d) row_count *= x.size(d);
  Tensor out = empty(x.shape(), x.options());
  Tensor rstd = empty({row_count}, x.options().dtype(kFloat32));
  if (row_count > 0) {
    Tensor x2 = x.detach().reshape({row_count, cols});
    View weight_slot;
    Tensor w1 = weight.defined() ? weight.detach().reshape({cols}) : Tensor();
    forward(out.view({row_count, cols}).view_of(), rstd.view_of(), x2.view_of(),
            nn_detail::optional_view(w1, weight_slot), e);
  }
  if (autograd::needs_grad({x, weight})) {
    const bool need_x = x.requires_grad(), need_w = weight.defined() && weight.requires_grad();
    autograd::record("rms_norm", {x, weight}, out,
                     [sx = autograd::SavedTensor(x, "rms_norm"),
                      sw = weight.defined() ? autograd::SavedTensor(weight, "rms_norm") : autograd::SavedTensor(), dims,
                      e, need_x, need_w, row_count, cols](const Tensor& g) {
                       const Tensor xv = sx.get(), wv = sw.get();
                       auto* backward = find_kernel<kernel::RmsNormBackward>(xv.device().type);
                       if (autograd::GradMode::is_enabled() || !backward)
                         return composed_backward(g, xv, wv, dims, e, need_x, need_w);
                       return fused_backward(*backward, g, xv, wv, e, need_x, need_w, row_count, cols);
                     });
  }
  return out;
}

}  // namespace anvil
