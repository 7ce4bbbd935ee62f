#include "nn/layers/batchnorm.h"

#include <sstream>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops/nn_ops.h"
#include "nn/init.h"

namespace anvil::nn {

BatchNormBase::BatchNormBase(const char* name, const BatchNorm2dOptions& o) : Module(name), options(o) {
  ANVIL_CHECK(o.num_features > 0, name, ": expected num_features > 0, got ", o.num_features);
  ANVIL_CHECK(!o.momentum || (*o.momentum >= 0 && *o.momentum <= 1), name, ": expected momentum in [0, 1], got ",
              o.momentum.value_or(0));
  if (o.affine) {
    weight = register_parameter("weight", empty({o.num_features}));
    bias = register_parameter("bias", empty({o.num_features}));
  }
  if (o.track_running_stats) {
    running_mean = register_buffer("running_mean", empty({o.num_features}));
    running_var = register_buffer("running_var", empty({o.num_features}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, kInt64));
  }
  reset_parameters();
}

void BatchNormBase::reset_running_stats() {
  if (!options.track_running_stats) return;
  init::zeros_(running_mean);
  init::ones_(running_var);
  init::zeros_(num_batches_tracked);
}

void BatchNormBase::reset_parameters() {
  reset_running_stats();
  if (!options.affine) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined() && x.dim() == 4 && x.size(1) == options.num_features, "BatchNorm2d: expected input [N, ",
              options.num_features, ", H, W], got ", x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  return normalize(x);
}

Tensor BatchNorm1d::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined() && (x.dim() == 2 || x.dim() == 3) && x.size(1) == options.num_features,
              "BatchNorm1d: expected input [N, ", options.num_features, "] or [N, ", options.num_features, ", L], got ",
              x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  ANVIL_CHECK(!is_training() || x.numel() / options.num_features > 1,
              "BatchNorm1d: expected more than one value per channel in training, got input ", x.shape_str());
  return normalize(x);
}

Tensor BatchNormBase::normalize(const Tensor& x) {
  const bool tracking = options.track_running_stats;
  BatchNormOptions o;
  o.eps = options.eps;
  // Batch statistics in training, and always when there are no running ones.
  o.training = is_training() || !tracking;
  o.momentum = options.momentum.value_or(0.0);
  if (is_training() && tracking) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
    if (!options.momentum) o.momentum = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  return batch_norm(x, weight, bias, tracking ? running_mean : Tensor(), tracking ? running_var : Tensor(), o);
}

std::string BatchNormBase::extra_repr() const {
  std::ostringstream os;
  os << options.num_features << ", eps=" << options.eps << ", momentum=";
  if (options.momentum)
    os << *options.momentum;
  else
    os << "None";
  os << ", affine=" << (options.affine ? "True" : "False")
     << ", track_running_stats=" << (options.track_running_stats ? "True" : "False");
  return os.str();
}

}  // namespace anvil::nn
