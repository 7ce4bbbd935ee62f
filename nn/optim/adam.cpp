#include "nn/optim/adam.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/ops/optim/fused_optim.h"
#include "nn/optim/multi_tensor.h"

namespace anvil::nn::optim {
namespace {

// Adam and AdamW share everything but the options type and `decoupled`.
template <class Options> void validate_adam(const Options& o, const std::string& optimizer) {
  ANVIL_CHECK(std::isfinite(o.lr) && o.lr >= 0, optimizer, ": invalid learning rate ", o.lr, " (expected >= 0)");
  ANVIL_CHECK(o.beta1 >= 0 && o.beta1 < 1, optimizer, ": invalid beta1 ", o.beta1, " (expected in [0, 1))");
  ANVIL_CHECK(o.beta2 >= 0 && o.beta2 < 1, optimizer, ": invalid beta2 ", o.beta2, " (expected in [0, 1))");
  ANVIL_CHECK(o.eps >= 0, optimizer, ": invalid eps ", o.eps, " (expected >= 0)");
  ANVIL_CHECK(o.weight_decay >= 0, optimizer, ": invalid weight_decay ", o.weight_decay, " (expected >= 0)");
}

template <class Options> HyperParams named_adam(const Options& o) {
  return {{"lr", o.lr},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay},
          {"maximize", o.maximize ? 1.0 : 0.0},
          {"amsgrad", o.amsgrad ? 1.0 : 0.0}};
}

template <class Options> bool set_named_adam(Options& o, std::string_view name, double value) {
  if (name == "lr")
    o.lr = value;
  else if (name == "beta1")
    o.beta1 = value;
  else if (name == "beta2")
    o.beta2 = value;
  else if (name == "eps")
    o.eps = value;
  else if (name == "weight_decay")
    o.weight_decay = value;
  else if (name == "maximize")
    o.maximize = value != 0;
  else if (name == "amsgrad")
    o.amsgrad = value != 0;
  else
    return false;
  return true;
}

// AMSGrad (amsgrad=true): Adam with the denominator taken from the running
// maximum of the second moments ("max_exp_avg_sq"), as torch.optim's:
//   v_max = max(v_max, v);  p -= lr / (1 - beta1^t) * m / (sqrt(v_max) / sqrt(1 - beta2^t) + eps)
// One parameter at a time in tensor ops (either backend), not the fused
// adamw kernel, whose contract has no third state tensor.
template <class Options>
void amsgrad_update(Tensor p, const Tensor& grad, ParamState& s, const Options& o, bool decoupled) {
  if (s.buffers.empty()) {
    for (const char* name : {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"})
      s.buffers.emplace(name, zeros(p.shape(), p.options()));
  }
  ++s.step;
  const double lr = o.lr, beta1 = o.beta1, beta2 = o.beta2, eps = o.eps, weight_decay = o.weight_decay;
  Tensor g = o.maximize ? -grad : grad;
  if (weight_decay != 0) {
    if (decoupled)
      p.mul_(1 - lr * weight_decay);
    else
      g = g + p * weight_decay;
  }
  Tensor& m = s.buffers.at("exp_avg");
  Tensor& v = s.buffers.at("exp_avg_sq");
  Tensor& v_max = s.buffers.at("max_exp_avg_sq");
  m.mul_(beta1).add_(g, 1 - beta1);
  v.mul_(beta2).addcmul_(g, g, 1 - beta2);
  v_max.copy_(maximum(v_max, v));
  const double t = static_cast<double>(s.step);
  const double bias1 = 1 - std::pow(beta1, t), bias2 = 1 - std::pow(beta2, t);
  p.sub_(m / (sqrt(v_max) / std::sqrt(bias2) + eps), lr / bias1);
}

template <class Optim> void adam_step(Optim& opt, bool decoupled) {
  NoGradGuard no_grad;
  const char* op = decoupled ? "AdamW.step" : "Adam.step";
  for (size_t g = 0; g < opt.num_param_groups(); ++g) {
    const auto& o = opt.options(g);
    if (o.amsgrad) {
      for (const Tensor& p : opt.params(g))
        if (p.grad().defined()) amsgrad_update(p, p.grad(), opt.state_for(p), o, decoupled);
      continue;
    }
    // Keyed by step count: parameters that missed a step have their own bias correction.
    internal::Batches batches;
    for (const Tensor& p : opt.params(g)) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      ParamState& s = opt.state_for(p);
      if (s.buffers.empty()) {
        s.buffers.emplace("exp_avg", zeros(p.shape(), p.options()));
        s.buffers.emplace("exp_avg_sq", zeros(p.shape(), p.options()));
      }
      ++s.step;
      internal::batch_for(batches, internal::batch_key(p, s.step), 2)
          .add(p, grad, {s.buffers.at("exp_avg"), s.buffers.at("exp_avg_sq")}, o.maximize, op);
    }
    for (auto& [key, batch] : batches) {
      AdamWParams hp;
      hp.lr = o.lr;
      hp.beta1 = o.beta1;
      hp.beta2 = o.beta2;
      hp.eps = o.eps;
      hp.weight_decay = o.weight_decay;
      hp.step = std::get<3>(key);
      hp.decoupled = decoupled;
      fused_adamw_(batch.params(), batch.grads(), batch.states(0), batch.states(1), hp);
      batch.finish();
    }
  }
}

}  // namespace

void AdamOptions::validate(const std::string& optimizer) const { validate_adam(*this, optimizer); }
HyperParams AdamOptions::named() const { return named_adam(*this); }
bool AdamOptions::set_named(std::string_view name, double value) { return set_named_adam(*this, name, value); }
void AdamWOptions::validate(const std::string& optimizer) const { validate_adam(*this, optimizer); }
HyperParams AdamWOptions::named() const { return named_adam(*this); }
bool AdamWOptions::set_named(std::string_view name, double value) { return set_named_adam(*this, name, value); }

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam(std::vector<Group>{Group(std::move(params))}, options) {}
Adam::Adam(std::vector<Group> groups, AdamOptions defaults) : OptimizerWith("Adam", std::move(groups), defaults) {}
void Adam::step() { adam_step(*this, /*decoupled=*/false); }

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : AdamW(std::vector<Group>{Group(std::move(params))}, options) {}
AdamW::AdamW(std::vector<Group> groups, AdamWOptions defaults) : OptimizerWith("AdamW", std::move(groups), defaults) {}
void AdamW::step() { adam_step(*this, /*decoupled=*/true); }

}  // namespace anvil::nn::optim
