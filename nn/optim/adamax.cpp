#include "nn/optim/adamax.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/ops/elementwise.h"
#include "nn/optim/param_update.h"

namespace anvil::nn::optim {

void AdamaxOptions::validate(const std::string& optimizer) const {
  internal::check_lr(optimizer, lr);
  internal::check_betas(optimizer, beta1, beta2);
  internal::check_non_negative(optimizer, "eps", eps);
  internal::check_non_negative(optimizer, "weight_decay", weight_decay);
}

HyperParams AdamaxOptions::named() const {
  return {{"lr", lr},
          {"beta1", beta1},
          {"beta2", beta2},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"maximize", maximize ? 1.0 : 0.0}};
}

bool AdamaxOptions::set_named(std::string_view name, double value) {
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
  else if (name == "maximize")
    maximize = value != 0;
  else
    return false;
  return true;
}

Adamax::Adamax(std::vector<Tensor> params, AdamaxOptions options)
    : Adamax(std::vector<Group>{Group(std::move(params))}, options) {}
Adamax::Adamax(std::vector<Group> groups, AdamaxOptions defaults)
    : OptimizerWith("Adamax", std::move(groups), defaults) {}

void Adamax::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < num_param_groups(); ++gi) {
    const AdamaxOptions& o = options(gi);
    for (Tensor p : params(gi)) {
      if (!p.grad().defined()) continue;
      Tensor g = internal::update_grad(p, o.maximize, o.weight_decay, "Adamax.step");
      ParamState& s = state_for(p);
      ++s.step;
      Tensor& exp_avg = internal::state_buffer(s, "exp_avg", p);
      Tensor& exp_inf = internal::state_buffer(s, "exp_inf", p);
      exp_avg.lerp_(g, 1.0 - o.beta1);
      exp_inf.copy_(maximum(exp_inf.mul_(o.beta2.value), g.abs().add_(o.eps.value)));
      const double clr = o.lr / (1.0 - std::pow(o.beta1, static_cast<double>(s.step)));
      p.addcdiv_(exp_avg, exp_inf, -clr);
    }
  }
}

}  // namespace anvil::nn::optim
