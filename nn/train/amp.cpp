#include "nn/train/amp.h"

#include <cmath>

#include "core/ops.h"

namespace anvil::nn::train {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32:
      return "fp32";
    case Precision::BF16:
      return "bf16";
    case Precision::FP16:
      return "fp16";
  }
  return "?";
}

DType compute_dtype(Precision p) {
  switch (p) {
    case Precision::BF16:
      return kBFloat16;
    case Precision::FP16:
      return kFloat16;
    default:
      return kFloat32;
  }
}

// ---------------------------------------------------------------- GradScaler

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {
  ANVIL_CHECK(options_.init_scale > 0 && std::isfinite(options_.init_scale),
              "GradScaler: init_scale must be positive and finite, got ", options_.init_scale);
  ANVIL_CHECK(options_.growth_factor > 1.0, "GradScaler: growth_factor must be > 1, got ", options_.growth_factor);
  ANVIL_CHECK(options_.backoff_factor > 0.0 && options_.backoff_factor < 1.0,
              "GradScaler: backoff_factor must be in (0, 1), got ", options_.backoff_factor);
  ANVIL_CHECK(options_.growth_interval >= 1, "GradScaler: growth_interval must be >= 1, got ",
              options_.growth_interval);
  state_.scale = options_.init_scale;
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!options_.enabled) return loss;
  return mul(loss, Scalar(state_.scale));
}

bool any_grad_non_finite(const std::vector<Tensor>& parameters) {
  // inf * 0 and nan * 0 are nan, finite * 0 is 0: the sum of grad * 0 is nan
  // exactly when some element is not finite. One reduction per gradient and a
  // single host read for all of them.
  Tensor total;
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (!g.defined() || g.numel() == 0) continue;
    Tensor probe = sum(mul(g.to(kFloat32), Scalar(0.0)));
    total = total.defined() ? add(total, probe) : probe;
  }
  return total.defined() && !std::isfinite(total.item<double>());
}

bool GradScaler::unscale_(optim::Optimizer& optimizer) { return unscale_(optimizer.parameters()); }

bool GradScaler::unscale_(const std::vector<Tensor>& parameters) {
  if (!options_.enabled) return false;
  ANVIL_CHECK(!unscaled_,
              "GradScaler::unscale_: already called since the last update() (gradients would be "
              "divided by the scale twice)");
  NoGradGuard no_grad;
  const double inv = 1.0 / state_.scale;
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (g.defined()) g.mul_(Scalar(inv));
  }
  found_inf_ = any_grad_non_finite(parameters);
  unscaled_ = true;
  return found_inf_;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  if (!unscaled_) unscale_(optimizer);
  if (found_inf_) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  if (found_inf_) {
    state_.scale *= options_.backoff_factor;
    state_.growth_tracker = 0;
  } else if (++state_.growth_tracker >= options_.growth_interval) {
    state_.scale *= options_.growth_factor;
    state_.growth_tracker = 0;
  }
  unscaled_ = false;
  found_inf_ = false;
}

void GradScaler::load_state_dict(const GradScalerState& state) {
  ANVIL_CHECK(state.scale > 0 && std::isfinite(state.scale),
              "GradScaler::load_state_dict: scale must be "
              "positive and finite, got ",
              state.scale);
  ANVIL_CHECK(state.growth_tracker >= 0, "GradScaler::load_state_dict: negative growth_tracker ", state.growth_tracker);
  state_ = state;
  unscaled_ = found_inf_ = false;
}

// ------------------------------------------------------------- MasterWeights

MasterWeights::MasterWeights(std::vector<Tensor> parameters, DType compute_dtype) : dtype_(compute_dtype) {
  ANVIL_CHECK(is_floating(compute_dtype), "MasterWeights: compute dtype must be floating, got ", compute_dtype);
  for (Tensor& p : parameters)
    if (p.dtype() == kFloat32) params_.push_back(std::move(p));
  masters_.resize(params_.size());
  grads_.resize(params_.size());
}

void MasterWeights::cast_down() {
  if (down_) return;
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    masters_[i] = params_[i].detach();  // keeps the float32 storage alive
    set_data(params_[i], params_[i].to(dtype_));
    params_[i].set_grad(Tensor());
  }
  down_ = true;
}

void MasterWeights::accumulate_grads() {
  ANVIL_CHECK(down_, "MasterWeights::accumulate_grads: call cast_down() (and backward) first");
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor g = params_[i].grad();
    if (!g.defined()) continue;
    Tensor g32 = g.to(kFloat32);
    if (grads_[i].defined())
      grads_[i].add_(g32);
    else
      grads_[i] = g32.same(g) ? g32.clone() : g32;
    params_[i].set_grad(Tensor());
  }
}

void MasterWeights::restore() {
  if (!down_) return;
  for (size_t i = 0; i < params_.size(); ++i) {
    set_data(params_[i], masters_[i]);
    masters_[i] = Tensor();
    params_[i].set_grad(grads_[i]);
    grads_[i] = Tensor();
  }
  down_ = false;
}

LowPrecisionScope::LowPrecisionScope(MasterWeights* weights) : weights_(weights) {
  if (weights_) weights_->cast_down();
}

LowPrecisionScope::~LowPrecisionScope() {
  if (weights_) weights_->restore();
}

}  // namespace anvil::nn::train
