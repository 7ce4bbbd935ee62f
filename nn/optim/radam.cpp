#include "nn/optim/radam.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/ops/elementwise.h"
#include "nn/optim/param_update.h"

namespace anvil::nn::optim {

void RAdamOptions::validate(const std::string& optimizer) const {
  internal::check_lr(optimizer, lr);
  internal::check_betas(optimizer, beta1, beta2);
  internal::check_non_negative(optimizer, "eps", eps);
  internal::check_non_negative(optimizer, "weight_decay", weight_decay);
}

HyperParams RAdamOptions::named() const {
  return {{"lr", lr},
          {"beta1", beta1},
          {"beta2", beta2},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"decoupled_weight_decay", decoupled_weight_decay ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

bool RAdamOptions::set_named(std::string_view name, double value) {
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
  else if (name == "decoupled_weight_decay")
    decoupled_weight_decay = value != 0;
  else if (name == "maximize")
    maximize = value != 0;
  else
    return false;
  return true;
}

RAdam::RAdam(std::vector<Tensor> params, RAdamOptions options)
    : RAdam(std::vector<Group>{Group(std::move(params))}, options) {}
RAdam::RAdam(std::vector<Group> groups, RAdamOptions defaults) : OptimizerWith("RAdam", std::move(groups), defaults) {}

void RAdam::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < num_param_groups(); ++gi) {
    const RAdamOptions& o = options(gi);
    const double lr = o.lr, beta1 = o.beta1, beta2 = o.beta2;
    for (Tensor p : params(gi)) {
      if (!p.grad().defined()) continue;
      Tensor g =
          internal::update_grad(p, o.maximize, o.decoupled_weight_decay ? 0.0 : o.weight_decay.value, "RAdam.step");
      if (o.decoupled_weight_decay && o.weight_decay != 0) p.mul_(1.0 - lr * o.weight_decay);
      ParamState& s = state_for(p);
      ++s.step;
      const double t = static_cast<double>(s.step);
      Tensor& exp_avg = internal::state_buffer(s, "exp_avg", p);
      Tensor& exp_avg_sq = internal::state_buffer(s, "exp_avg_sq", p);
      exp_avg.lerp_(g, 1.0 - beta1);
      exp_avg_sq.mul_(beta2).addcmul_(g, g, 1.0 - beta2);
      const double bias_correction1 = 1.0 - std::pow(beta1, t), bias_correction2 = 1.0 - std::pow(beta2, t);
      const double rho_inf = 2.0 / (1.0 - beta2) - 1.0;
      const double rho_t = rho_inf - 2.0 * t * std::pow(beta2, t) / bias_correction2;
      if (rho_t > 5.0) {
        const double rect =
            std::sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
        Tensor denom = exp_avg_sq.sqrt().add_(o.eps.value);
        p.addcdiv_(exp_avg, denom, -lr * rect * std::sqrt(bias_correction2) / bias_correction1);
      } else {
        p.add_(exp_avg, -lr / bias_correction1);
      }
    }
  }
}

}  // namespace anvil::nn::optim
