// group_norm and instance_norm as layer_norm / batch_norm over a reshaped
// input (the fused kernels do the statistics).
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
