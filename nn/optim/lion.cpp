#include "nn/optim/lion.h"

#include "core/autograd/grad_mode.h"
#include "core/ops/elementwise.h"
#include "nn/optim/param_update.h"

namespace anvil::nn::optim {

void LionOptions::validate(const std::string& optimizer) const {
  internal::check_lr(optimizer, lr);
  internal::check_betas(optimizer, beta1, beta2);
  internal::check_non_negative(optimizer, "weight_decay", weight_decay);
}

HyperParams LionOptions::named() const {
  return {{"lr", lr},
          {"beta1", beta1},
          {"beta2", beta2},
          {"weight_decay", weight_decay},
          {"maximize", maximize ? 1.0 : 0.0}};
}

bool LionOptions::set_named(std::string_view name, double value) {
  if (name == "lr")
    lr = value;
  else if (name == "beta1")
    beta1 = value;
  else if (name == "beta2")
    beta2 = value;
  else if (name == "weight_decay")
    weight_decay = value;
  else if (name == "maximize")
    maximize = value != 0;
  else
    return false;
  return true;
}

Lion::Lion(std::vector<Tensor> params, LionOptions options)
    : Lion(std::vector<Group>{Group(std::move(params))}, options) {}
Lion::Lion(std::vector<Group> groups, LionOptions defaults) : OptimizerWith("Lion", std::move(groups), defaults) {}

void Lion::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < num_param_groups(); ++gi) {
    const LionOptions& o = options(gi);
    const double lr = o.lr;
    for (Tensor p : params(gi)) {
      if (!p.grad().defined()) continue;
      Tensor g = internal::update_grad(p, o.maximize, 0.0, "Lion.step");
      ParamState& s = state_for(p);
      ++s.step;
      Tensor& exp_avg = internal::state_buffer(s, "exp_avg", p);
      if (o.weight_decay != 0) p.mul_(1.0 - lr * o.weight_decay);
      p.add_(sign(lerp(exp_avg, g, 1.0 - o.beta1)), -lr);
      exp_avg.lerp_(g, 1.0 - o.beta2);
    }
  }
}

}  // namespace anvil::nn::optim
