#include "nn/optim/nadam.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/ops/elementwise.h"
#include "nn/optim/param_update.h"

namespace anvil::nn::optim {

void NAdamOptions::validate(const std::string& optimizer) const {
  internal::check_lr(optimizer, lr);
  internal::check_betas(optimizer, beta1, beta2);
  internal::check_non_negative(optimizer, "eps", eps);
  internal::check_non_negative(optimizer, "weight_decay", weight_decay);
  internal::check_non_negative(optimizer, "momentum_decay", momentum_decay);
}

HyperParams NAdamOptions::named() const {
  return {{"lr", lr},
          {"beta1", beta1},
          {"beta2", beta2},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"momentum_decay", momentum_decay},
          {"decoupled_weight_decay", decoupled_weight_decay ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

bool NAdamOptions::set_named(std::string_view name, double value) {
  if (name == "lr")
    lr = value;
  else if (name == "beta1")
    beta1 = value;
  else if (name == "beta2")
    beta2 = value;
  else if (name == "eps")
    eps = value;
  else if (name == "weight_decay")
    weight_decay = value;
  else if (name == "momentum_decay")
    momentum_decay = value;
  else if (name == "decoupled_weight_decay")
    decoupled_weight_decay = value != 0;
  else if (name == "maximize")
    maximize = value != 0;
  else
    return false;
  return true;
}

NAdam::NAdam(std::vector<Tensor> params, NAdamOptions options)
    : NAdam(std::vector<Group>{Group(std::move(params))}, options) {}
NAdam::NAdam(std::vector<Group> groups, NAdamOptions defaults) : OptimizerWith("NAdam", std::move(groups), defaults) {}

void NAdam::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < num_param_groups(); ++gi) {
    const NAdamOptions& o = options(gi);
    const double lr = o.lr, beta1 = o.beta1, beta2 = o.beta2;
    for (Tensor p : params(gi)) {
      if (!p.grad().defined()) continue;
      Tensor g =
          internal::update_grad(p, o.maximize, o.decoupled_weight_decay ? 0.0 : o.weight_decay.value, "NAdam.step");
      if (o.decoupled_weight_decay && o.weight_decay != 0) p.mul_(1.0 - lr * o.weight_decay);
      ParamState& s = state_for(p);
      ++s.step;
      const double t = static_cast<double>(s.step);
      const double mu = beta1 * (1.0 - 0.5 * std::pow(0.96, t * o.momentum_decay));
      const double mu_next = beta1 * (1.0 - 0.5 * std::pow(0.96, (t + 1.0) * o.momentum_decay));
      auto [it, fresh] = s.scalars.try_emplace("mu_product", 1.0);
      (void)fresh;
      const double mu_product = it->second *= mu;
      Tensor& exp_avg = internal::state_buffer(s, "exp_avg", p);
      Tensor& exp_avg_sq = internal::state_buffer(s, "exp_avg_sq", p);
      exp_avg.lerp_(g, 1.0 - beta1);
      exp_avg_sq.mul_(beta2).addcmul_(g, g, 1.0 - beta2);
      Tensor denom = exp_avg_sq.div(1.0 - std::pow(beta2, t)).sqrt().add_(o.eps.value);
      p.addcdiv_(g, denom, -lr * (1.0 - mu) / (1.0 - mu_product));
      p.addcdiv_(exp_avg, denom, -lr * mu_next / (1.0 - mu_product * mu_next));
    }
  }
}

}  // namespace anvil::nn::optim
