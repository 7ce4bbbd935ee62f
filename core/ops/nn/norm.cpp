// batch_norm and layer_norm. Forward and first-order backward run the fused
// kernels; under create_graph the backward is composed from differentiable
// ops instead (recomputing the statistics from the input), so second-order
// gradients flow through the normalisation too.
#include <cmath>

#include "core/autocast.h"
#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/nn/nn_common.h"
#include "core/ops/nn_ops.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"

namespace anvil {

// The kernel ops this file calls, listed in the coverage table whatever this
// build registers for them (a CPU-only build has no add_layer_norm kernel).
ANVIL_DECLARE_KERNEL_OP(kernel::AddLayerNorm);
ANVIL_DECLARE_KERNEL_OP(kernel::LayerNorm);
ANVIL_DECLARE_KERNEL_OP(kernel::LayerNormBackward);
ANVIL_DECLARE_KERNEL_OP(kernel::BatchNorm);
ANVIL_DECLARE_KERNEL_OP(kernel::BatchNormBackward);

using autograd::GradMode;
using autograd::SavedTensor;
using nn_detail::Grads;
using nn_detail::optional_view;

namespace {

// What the batch-norm backward needs besides the incoming gradient.
struct BatchNormSaved {
  SavedTensor x, weight, running_mean, running_var;
  Tensor save_mean, save_invstd;  // [C] float32, internal to this node
  BatchNormParams params;
  bool need_x = false, need_w = false, need_b = false;
  DType weight_dtype = kFloat32, bias_dtype = kFloat32;
};

void check_channel_param(const Tensor& t, int64_t channels, const char* what, const Tensor& x) {
  if (!t.defined()) return;
  detail::check_floating("batch_norm", t, what);
  ANVIL_CHECK(t.dim() == 1 && t.size(0) == channels, "batch_norm: expected ", what, " of shape [", channels,
              "] (the channels of input ", detail::describe(x), "), got ", detail::describe(t));
}

// Dims of x other than the channel dim, and the shape that broadcasts a [C]
// tensor against x.
Shape reduce_dims_of(const Tensor& x) {
  Shape dims{0};
  for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  return dims;
}
Shape channel_shape_of(const Tensor& x) {
  Shape s(static_cast<size_t>(x.dim()), 1);
  s[1] = x.size(1);
  return s;
}

// The batch-norm gradient written with ops, for create_graph.
Grads batch_norm_composed_backward(const Tensor& g, const BatchNormSaved& s) {
  Tensor x = s.x.get(), weight = s.weight.get();
  const Shape dims = reduce_dims_of(x), cshape = channel_shape_of(x);
  Tensor xhat, invstd;
  if (s.params.training) {
    Tensor xc = x - mean(x, dims, true);
    invstd = rsqrt(mean(xc * xc, dims, true) + s.params.eps);
    xhat = xc * invstd;
  } else {
    invstd = rsqrt(s.running_var.get().to(x.dtype()).reshape(cshape) + s.params.eps);
    xhat = (x - s.running_mean.get().to(x.dtype()).reshape(cshape)) * invstd;
  }
  Grads r(3);
  if (s.need_x) {
    Tensor scale = weight.defined() ? invstd * weight.to(x.dtype()).reshape(cshape) : invstd;
    Tensor gx = s.params.training ? g - mean(g, dims, true) - xhat * mean(g * xhat, dims, true) : g;
    r[0] = gx * scale;
  }
  if (s.need_w) r[1] = sum(g * xhat, dims).to(s.weight_dtype);
  if (s.need_b) r[2] = sum(g, dims).to(s.bias_dtype);
  return r;
}

Grads batch_norm_fused_backward(const Tensor& g, const BatchNormSaved& s) {
  Tensor x = s.x.get(), weight = s.weight.get();
  const int64_t channels = x.size(1);
  Tensor grad_in = empty(x.shape(), x.options());
  Tensor grad_w = s.need_w ? empty({channels}, x.options().dtype(s.weight_dtype)) : Tensor();
  Tensor grad_b = s.need_b ? empty({channels}, x.options().dtype(s.bias_dtype)) : Tensor();
  if (x.numel() == 0) {
    grad_in.zero_();
    if (grad_w.defined()) grad_w.zero_();
    if (grad_b.defined()) grad_b.zero_();
  } else {
    View w_slot, gw_slot, gb_slot;
    detail::kernel_of<kernel::BatchNormBackward>(x)(
        grad_in.view_of(), optional_view(grad_w, gw_slot), optional_view(grad_b, gb_slot), g.view_of(), x.view_of(),
        optional_view(weight, w_slot), s.save_mean.view_of(), s.save_invstd.view_of(), s.params);
  }
  return Grads{s.need_x ? grad_in : Tensor(), grad_w, grad_b};
}

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, const BatchNormOptions& o) {
  if (auto cast = autocast::full_precision_inputs(x, weight, bias))
    return batch_norm(cast[0], cast[1], cast[2], running_mean, running_var, o);
  detail::check_floating("batch_norm", x, "input");
  ANVIL_CHECK(x.dim() >= 2, "batch_norm: expected input [N, C, ...] with at least 2 dims, got ", detail::describe(x));
  detail::check_same_device("batch_norm", {x, weight, bias, running_mean, running_var});
  const int64_t channels = x.size(1);
  check_channel_param(weight, channels, "weight", x);
  check_channel_param(bias, channels, "bias", x);
  check_channel_param(running_mean, channels, "running_mean", x);
  check_channel_param(running_var, channels, "running_var", x);
  ANVIL_CHECK(running_mean.defined() == running_var.defined(),
              "batch_norm: running_mean and running_var must be given together, got running_mean ",
              detail::describe(running_mean), " and running_var ", detail::describe(running_var));
  ANVIL_CHECK(o.eps >= 0 && o.momentum >= 0 && o.momentum <= 1, "batch_norm: expected eps >= 0 and momentum in ",
              "[0, 1], got eps ", o.eps, ", momentum ", o.momentum);
  if (o.training) {
    ANVIL_CHECK(x.numel() > channels, "batch_norm: expected more than 1 value per channel in training, got input ",
                detail::describe(x));
    for (const Tensor* stat : {&running_mean, &running_var})
      ANVIL_CHECK(!stat->defined() || !stat->requires_grad(), "batch_norm: running statistics are updated in ",
                  "place and must not require grad, got ", detail::describe(*stat));
  } else {
    ANVIL_CHECK(running_mean.defined(), "batch_norm: evaluation mode (training=false) needs running_mean and ",
                "running_var; pass them or use training=true");
  }

  BatchNormParams p{o.training, o.momentum, o.eps};
  Tensor out = empty(x.shape(), x.options());
  Tensor save_mean = empty({channels}, x.options().dtype(kFloat32));
  Tensor save_invstd = empty({channels}, x.options().dtype(kFloat32));
  if (!o.training) {
    // Evaluation normalises with the running statistics; the kernel reads them
    // as mean/invstd (and the backward needs them after later updates too).
    NoGradGuard no_grad;
    save_mean.copy_(running_mean.detach());
    save_invstd.copy_(rsqrt(running_var.detach().to(kFloat64) + o.eps));
  }
  if (x.numel() > 0) {
    View w_slot, b_slot, rm_slot, rv_slot;
    detail::kernel_of<kernel::BatchNorm>(x)(
        out.view_of(), save_mean.view_of(), save_invstd.view_of(), x.view_of(), optional_view(weight, w_slot),
        optional_view(bias, b_slot), optional_view(running_mean, rm_slot), optional_view(running_var, rv_slot), p);
    if (o.training && running_mean.defined()) {
      running_mean.bump_version();
      running_var.bump_version();
    }
  }

  if (autograd::needs_grad({x, weight, bias})) {
    auto s = std::make_shared<BatchNormSaved>();
    s->x = SavedTensor(x, "batch_norm");
    s->weight = SavedTensor(weight, "batch_norm");
    if (!o.training) {
      // Clones: the buffers themselves keep changing in later training steps.
      s->running_mean = SavedTensor(running_mean.detach().clone(), "batch_norm");
      s->running_var = SavedTensor(running_var.detach().clone(), "batch_norm");
    }
    s->save_mean = save_mean;
    s->save_invstd = save_invstd;
    s->params = p;
    s->need_x = x.requires_grad();
    s->need_w = weight.defined() && weight.requires_grad();
    s->need_b = bias.defined() && bias.requires_grad();
    if (weight.defined()) s->weight_dtype = weight.dtype();
    if (bias.defined()) s->bias_dtype = bias.dtype();
    autograd::record("batch_norm", {x, weight, bias}, out, [s](const Tensor& g) {
      return GradMode::is_enabled() ? batch_norm_composed_backward(g, *s) : batch_norm_fused_backward(g, *s);
    });
  }
  return out;
}

// --- layer norm ---

namespace {

struct LayerNormSaved {
  SavedTensor x, weight;
  Tensor mean, rstd;  // [rows] float32
  Shape normalized_shape;
  int64_t rows = 0, cols = 0;
  double eps = 1e-5;
  bool need_x = false, need_w = false, need_b = false;
  DType weight_dtype = kFloat32, bias_dtype = kFloat32;
};

Grads layer_norm_composed_backward(const Tensor& g, const LayerNormSaved& s) {
  Tensor x = s.x.get().reshape({s.rows, s.cols}), g2 = g.reshape({s.rows, s.cols});
  Tensor xc = x - mean(x, {1}, true);
  Tensor rstd = rsqrt(mean(xc * xc, {1}, true) + s.eps);
  Tensor xhat = xc * rstd;
  Grads r(3);
  if (s.need_x) {
    Tensor weight = s.weight.get();
    Tensor gw = weight.defined() ? g2 * weight.to(x.dtype()).reshape({s.cols}) : g2;
    r[0] = ((gw - mean(gw, {1}, true) - xhat * mean(gw * xhat, {1}, true)) * rstd).reshape(s.x.get().shape());
  }
  if (s.need_w) r[1] = sum(g2 * xhat, {0}).reshape(s.normalized_shape).to(s.weight_dtype);
  if (s.need_b) r[2] = sum(g2, {0}).reshape(s.normalized_shape).to(s.bias_dtype);
  return r;
}

Grads layer_norm_fused_backward(const Tensor& g, const LayerNormSaved& s) {
  Tensor x = s.x.get(), weight = s.weight.get();
  Tensor grad_in = empty({s.rows, s.cols}, x.options());
  Tensor grad_w = s.need_w ? empty({s.cols}, x.options().dtype(s.weight_dtype)) : Tensor();
  Tensor grad_b = s.need_b ? empty({s.cols}, x.options().dtype(s.bias_dtype)) : Tensor();
  if (grad_in.numel() == 0) {
    grad_in.zero_();
    if (grad_w.defined()) grad_w.zero_();
    if (grad_b.defined()) grad_b.zero_();
  } else {
    View w_slot, gw_slot, gb_slot;
    Tensor w2 = weight.defined() ? weight.reshape({s.cols}) : Tensor();
    detail::kernel_of<kernel::LayerNormBackward>(x)(
        grad_in.view_of(), optional_view(grad_w, gw_slot), optional_view(grad_b, gb_slot),
        g.reshape({s.rows, s.cols}).view_of(), x.reshape({s.rows, s.cols}).view_of(), s.mean.view_of(),
        s.rstd.view_of(), optional_view(w2, w_slot));
  }
  Grads r(3);
  if (s.need_x) r[0] = grad_in.view(x.shape());
  if (s.need_w) r[1] = grad_w.view(s.normalized_shape);
  if (s.need_b) r[2] = grad_b.view(s.normalized_shape);
  return r;
}

}  // namespace

namespace {

// The argument checks of layer_norm and add_layer_norm (x is the normalised input).
void check_layer_norm_args(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                           double eps) {
  detail::check_floating("layer_norm", x, "input");
  detail::check_same_device("layer_norm", {x, weight, bias});
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  ANVIL_CHECK(nd > 0, "layer_norm: normalized_shape must name at least one trailing dim, got []");
  bool trailing_match = x.dim() >= nd;
  for (int64_t i = 0; trailing_match && i < nd; ++i)
    trailing_match = x.size(x.dim() - nd + i) == normalized_shape[static_cast<size_t>(i)];
  ANVIL_CHECK(trailing_match, "layer_norm: normalized_shape ", normalized_shape,
              " does not match the trailing dims of input ", detail::describe(x));
  for (auto [t, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    if (!t->defined()) continue;
    detail::check_floating("layer_norm", *t, what);
    ANVIL_CHECK(t->shape() == normalized_shape, "layer_norm: expected ", what, " of shape ", normalized_shape,
                " (normalized_shape), got ", detail::describe(*t));
  }
  ANVIL_CHECK(eps >= 0, "layer_norm: expected eps >= 0, got ", eps);
}

// Records the layer-norm node for out = layer_norm(x) given the saved row statistics.
void record_layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                       double eps, int64_t rows, int64_t cols, const Tensor& mean_rows, const Tensor& rstd_rows,
                       Tensor& out) {
  if (!autograd::needs_grad({x, weight, bias})) return;
  auto s = std::make_shared<LayerNormSaved>();
  s->x = SavedTensor(x, "layer_norm");
  s->weight = SavedTensor(weight, "layer_norm");
  s->mean = mean_rows;
  s->rstd = rstd_rows;
  s->normalized_shape = normalized_shape;
  s->rows = rows;
  s->cols = cols;
  s->eps = eps;
  s->need_x = x.requires_grad();
  s->need_w = weight.defined() && weight.requires_grad();
  s->need_b = bias.defined() && bias.requires_grad();
  if (weight.defined()) s->weight_dtype = weight.dtype();
  if (bias.defined()) s->bias_dtype = bias.dtype();
  autograd::record("layer_norm", {x, weight, bias}, out, [s](const Tensor& g) {
    return GradMode::is_enabled() ? layer_norm_composed_backward(g, *s) : layer_norm_fused_backward(g, *s);
  });
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  if (auto cast = autocast::full_precision_inputs(x, weight, bias))
    return layer_norm(cast[0], normalized_shape, cast[1], cast[2], eps);
  check_layer_norm_args(x, normalized_shape, weight, bias, eps);
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  const int64_t cols = numel_of(normalized_shape);
  int64_t rows = 1;
  for (int64_t d = 0; d < x.dim() - nd; ++d) rows *= x.size(d);
  Tensor x2 = x.detach().reshape({rows, cols});
  Tensor out = empty({rows, cols}, x.options());
  Tensor mean_rows = empty({rows}, x.options().dtype(kFloat32));
  Tensor rstd_rows = empty({rows}, x.options().dtype(kFloat32));
  if (out.numel() > 0) {
    Tensor w2 = weight.defined() ? weight.detach().reshape({cols}) : Tensor();
    Tensor b2 = bias.defined() ? bias.detach().reshape({cols}) : Tensor();
    View w_slot, b_slot;
    detail::kernel_of<kernel::LayerNorm>(x)(out.view_of(), mean_rows.view_of(), rstd_rows.view_of(), x2.view_of(),
                                            optional_view(w2, w_slot), optional_view(b2, b_slot), eps);
  }
  out = out.view(x.shape());
  record_layer_norm(x, normalized_shape, weight, bias, eps, rows, cols, mean_rows, rstd_rows, out);
  return out;
}

AddLayerNormResult add_layer_norm(const Tensor& x, const Tensor& residual, const Shape& normalized_shape,
                                  const Tensor& weight, const Tensor& bias, double eps) {
  if (auto cast = autocast::full_precision_inputs(x, residual, weight, bias))
    return add_layer_norm(cast[0], cast[1], normalized_shape, cast[2], cast[3], eps);
  detail::check_same_device("add_layer_norm", {x, residual, weight, bias});
  ANVIL_CHECK(x.shape() == residual.shape() && x.dtype() == residual.dtype(),
              "add_layer_norm: x and residual must have one shape and dtype (no broadcasting), got ",
              detail::describe(x), " and ", detail::describe(residual));
  check_layer_norm_args(x, normalized_shape, weight, bias, eps);
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  const int64_t cols = numel_of(normalized_shape);
  int64_t rows = 1;
  for (int64_t d = 0; d < x.dim() - nd; ++d) rows *= x.size(d);
  Tensor sum2 = empty({rows, cols}, x.options());
  Tensor out = empty({rows, cols}, x.options());
  Tensor mean_rows = empty({rows}, x.options().dtype(kFloat32));
  Tensor rstd_rows = empty({rows}, x.options().dtype(kFloat32));
  if (out.numel() > 0) {
    Tensor x2 = x.detach().reshape({rows, cols}), r2 = residual.detach().reshape({rows, cols});
    Tensor w2 = weight.defined() ? weight.detach().reshape({cols}) : Tensor();
    Tensor b2 = bias.defined() ? bias.detach().reshape({cols}) : Tensor();
    View w_slot, b_slot;
    const View* w = optional_view(w2, w_slot);
    const View* b = optional_view(b2, b_slot);
    if (auto* fused = find_kernel<kernel::AddLayerNorm>(x.device().type)) {
      fused(out.view_of(), sum2.view_of(), mean_rows.view_of(), rstd_rows.view_of(), x2.view_of(), r2.view_of(), w, b,
            eps);
    } else {  // the composed fallback: the sum rounded to the dtype, then its layer norm
      detail::kernel_of<kernel::Binary>(x)(BinaryOp::Add, sum2.view_of(), x2.view_of(), r2.view_of());
      detail::kernel_of<kernel::LayerNorm>(x)(out.view_of(), mean_rows.view_of(), rstd_rows.view_of(), sum2.view_of(),
                                              w, b, eps);
    }
  }
  // Two nodes, as if the ops were written apart: sum = x + residual, then the
  // layer norm of sum (its gradient adds to whatever else uses sum).
  Tensor sum = sum2.view(x.shape());
  if (autograd::needs_grad({x, residual}))
    autograd::record("add_layer_norm.add", {x, residual}, sum, [](const Tensor& g) { return Grads{g, g}; });
  out = out.view(x.shape());
  record_layer_norm(sum, normalized_shape, weight, bias, eps, rows, cols, mean_rows, rstd_rows, out);
  return {sum, out};
}

}  // namespace anvil
