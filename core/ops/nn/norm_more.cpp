// group_norm and instance_norm as layer_norm / batch_norm over a reshaped
// input (the fused kernels do the statistics), and rms_norm on its own
// forward kernel with a backward composed from ops.
#include <limits>

#include "core/autocast.h"
#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/nn/nn_common.h"
#include "core/ops/elementwise.h"
#include "core/ops/nn_functional.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"

namespace anvil {

namespace {

void check_channel_vector(const char* op, const Tensor& t, const char* what, const Tensor& x) {
  if (!t.defined()) return;
  ANVIL_CHECK(t.dim() == 1 && t.size(0) == x.size(1), op, ": expected ", what, " [", x.size(1),
              "] (one per channel of input ", detail::describe(x), "), got ", detail::describe(t));
}

// [C] -> [1, C, 1, ...] to broadcast over x [N, C, *].
Tensor per_channel(const Tensor& t, const Tensor& x) {
  Shape s(static_cast<size_t>(x.dim()), 1);
  s[1] = x.size(1);
  return t.view(s);
}

}  // namespace

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  if (auto cast = autocast::full_precision_inputs(x, weight, bias))
    return group_norm(cast[0], num_groups, cast[1], cast[2], eps);
  detail::check_floating("group_norm", x, "input");
  ANVIL_CHECK(x.dim() >= 2, "group_norm: expected input [N, C, *], got ", detail::describe(x));
  ANVIL_CHECK(num_groups > 0 && x.size(1) % num_groups == 0, "group_norm: expected num_groups (", num_groups,
              ") to divide the ", x.size(1), " channels of input ", detail::describe(x));
  detail::check_same_device("group_norm", {x, weight, bias});
  check_channel_vector("group_norm", weight, "weight", x);
  check_channel_vector("group_norm", bias, "bias", x);
  const int64_t n = x.size(0), group_size = numel_of(x.shape()) / std::max<int64_t>(n * num_groups, 1);
  if (x.numel() == 0) return x.clone();
  Tensor y = layer_norm(x.reshape({n, num_groups, group_size}), {group_size}, {}, {}, eps).reshape(x.shape());
  if (weight.defined()) y = y * per_channel(weight, x);
  if (bias.defined()) y = y + per_channel(bias, x);
  return y;
}

namespace {

// grad_in and grad_weight of rms_norm from the backend's one-pass kernel.
nn_detail::Grads rms_norm_fused_backward(const Tensor& g, const Tensor& x, const Tensor& weight, double eps,
                                         bool need_x, bool need_w, int64_t rows, int64_t cols) {
  nn_detail::Grads grads(2);
  Tensor grad_in = need_x ? empty({rows, cols}, x.options()) : Tensor();
  Tensor grad_w = need_w ? empty({cols}, weight.options()) : Tensor();
  if (rows > 0) {
    View w_slot, gw_slot;
    Tensor w1 = weight.defined() ? weight.reshape({cols}) : Tensor();
    const Tensor g2 = g.to(x.dtype()).reshape({rows, cols});
    detail::kernel_of<kernel::RmsNormBackward>(x)(
        grad_in.defined() ? grad_in.view_of() : View{}, nn_detail::optional_view(grad_w, gw_slot), g2.view_of(),
        x.reshape({rows, cols}).view_of(), nn_detail::optional_view(w1, w_slot), eps);
  } else if (grad_w.defined()) {
    grad_w.zero_();
  }
  if (need_x) grads[0] = grad_in.view(x.shape());
  if (need_w) grads[1] = grad_w.view(weight.shape());
  return grads;
}

}  // namespace

// One kernel pass forward (kernels/*/rms_norm) and one backward
// (rms_norm_backward, which recomputes the row scale from x, so float64 stays
// exact). Under create_graph the backward is composed from ops instead, so
// it is itself differentiable (double backward).
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
  const double e = eps.value_or(x.dtype() == kFloat64    ? std::numeric_limits<double>::epsilon()
                                : x.dtype() == kFloat16  ? 0.0009765625
                                : x.dtype() == kBFloat16 ? 0.0078125
                                                         : static_cast<double>(std::numeric_limits<float>::epsilon()));
  const int64_t cols = numel_of(normalized_shape);
  int64_t row_count = 1;
  for (int64_t d = 0; d < x.dim() - nd; ++d) row_count *= x.size(d);
  Tensor out = empty(x.shape(), x.options());
  Tensor rstd = empty({row_count}, x.options().dtype(kFloat32));
  if (row_count > 0) {
    Tensor x2 = x.detach().reshape({row_count, cols});
    View weight_slot;
    Tensor w1 = weight.defined() ? weight.detach().reshape({cols}) : Tensor();
    detail::kernel_of<kernel::RmsNorm>(x)(out.view({row_count, cols}).view_of(), rstd.view_of(), x2.view_of(),
                                          nn_detail::optional_view(w1, weight_slot), e);
  }
  if (autograd::needs_grad({x, weight})) {
    const bool need_x = x.requires_grad(), need_w = weight.defined() && weight.requires_grad();
    autograd::record("rms_norm", {x, weight}, out,
                     [sx = autograd::SavedTensor(x, "rms_norm"),
                      sw = weight.defined() ? autograd::SavedTensor(weight, "rms_norm") : autograd::SavedTensor(),
                      has_w = weight.defined(), dims, e, need_x, need_w, row_count, cols](const Tensor& g) {
                       Tensor xv = sx.get();
                       if (!autograd::GradMode::is_enabled())
                         return rms_norm_fused_backward(g, xv, sw.get(), e, need_x, need_w, row_count, cols);
                       Tensor r = rsqrt(mean(xv * xv, dims, true) + e);
                       nn_detail::Grads grads(2);
                       if (need_x) {
                         Tensor gw = has_w ? g * sw.get() : g;
                         grads[0] = r * (gw - xv * (r * r) * mean(gw * xv, dims, true));
                       }
                       if (need_w) grads[1] = sum_to(g * xv * r, sw.get().shape());
                       return grads;
                     });
  }
  return out;
}

// PyTorch's own composition: batch_norm over [1, N*C, *], each (sample,
// channel) its own channel, with the running stats repeated per sample and
// averaged back.
Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, const InstanceNormOptions& o) {
  detail::check_floating("instance_norm", x, "input");
  ANVIL_CHECK(x.dim() >= 3, "instance_norm: expected input [N, C, *] with at least one spatial dim, got ",
              detail::describe(x));
  detail::check_same_device("instance_norm", {x, running_mean, running_var, weight, bias});
  check_channel_vector("instance_norm", weight, "weight", x);
  check_channel_vector("instance_norm", bias, "bias", x);
  check_channel_vector("instance_norm", running_mean, "running_mean", x);
  check_channel_vector("instance_norm", running_var, "running_var", x);
  ANVIL_CHECK(running_mean.defined() == running_var.defined(),
              "instance_norm: running_mean and running_var must be given together");
  ANVIL_CHECK(o.use_input_stats || running_mean.defined(),
              "instance_norm: use_input_stats=false needs running_mean and running_var");
  const int64_t n = x.size(0), c = x.size(1);
  auto per_instance = [&](const Tensor& t) { return t.defined() ? t.repeat({n}) : Tensor(); };
  Tensor rm = per_instance(running_mean), rv = per_instance(running_var);
  Shape flat{1, n * c};
  for (int64_t d = 2; d < x.dim(); ++d) flat.push_back(x.size(d));
  BatchNormOptions bo;
  bo.training = o.use_input_stats;
  bo.momentum = o.momentum;
  bo.eps = o.eps;
  Tensor y = batch_norm(x.reshape(flat), {}, {}, rm, rv, bo).reshape(x.shape());
  if (o.use_input_stats && running_mean.defined()) {
    NoGradGuard no_grad;
    Tensor rm_avg = rm.view({n, c}).mean({0}), rv_avg = rv.view({n, c}).mean({0});
    Tensor(running_mean).copy_(rm_avg);
    Tensor(running_var).copy_(rv_avg);
  }
  if (weight.defined()) y = y * per_channel(weight, x);
  if (bias.defined()) y = y + per_channel(bias, x);
  return y;
}

}  // namespace anvil
