#include "nn/optim/adagrad.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "nn/optim/param_update.h"

namespace anvil::nn::optim {

void AdagradOptions::validate(const std::string& optimizer) const {
  ANVIL_CHECK(std::isfinite(lr) && lr >= 0, optimizer, ": invalid learning rate ", lr, " (expected >= 0)");
  ANVIL_CHECK(lr_decay >= 0, optimizer, ": invalid lr_decay ", lr_decay, " (expected >= 0)");
  ANVIL_CHECK(weight_decay >= 0, optimizer, ": invalid weight_decay ", weight_decay, " (expected >= 0)");
  ANVIL_CHECK(initial_accumulator_value >= 0, optimizer, ": invalid initial_accumulator_value ",
              initial_accumulator_value, " (expected >= 0)");
  ANVIL_CHECK(eps >= 0, optimizer, ": invalid eps ", eps, " (expected >= 0)");
}

HyperParams AdagradOptions::named() const {
  return {{"lr", lr},
          {"lr_decay", lr_decay},
          {"weight_decay", weight_decay},
          {"initial_accumulator_value", initial_accumulator_value},
          {"eps", eps},
          {"maximize", maximize ? 1.0 : 0.0}};
}

bool AdagradOptions::set_named(std::string_view name, double value) {
  if (name == "lr")
    lr = value;
  else if (name == "lr_decay")
    lr_decay = value;
  else if (name == "weight_decay")
    weight_decay = value;
  else if (name == "initial_accumulator_value")
    initial_accumulator_value = value;
  else if (name == "eps")
    eps = value;
  else if (name == "maximize")
    maximize = value != 0;
  else
    return false;
  return true;
}

Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions options)
    : Adagrad(std::vector<Group>{Group(std::move(params))}, options) {}
Adagrad::Adagrad(std::vector<Group> groups, AdagradOptions defaults)
    : OptimizerWith("Adagrad", std::move(groups), defaults) {}

void Adagrad::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < num_param_groups(); ++gi) {
    const AdagradOptions& o = options(gi);
    for (Tensor p : params(gi)) {
      if (!p.grad().defined()) continue;
      Tensor g = internal::update_grad(p, o.maximize, o.weight_decay, "Adagrad.step");
      ParamState& s = state_for(p);
      ++s.step;
      const double clr = o.lr / (1.0 + static_cast<double>(s.step - 1) * o.lr_decay);
      Tensor& sum = internal::state_buffer(s, "sum", p, o.initial_accumulator_value);
      sum.addcmul_(g, g, 1.0);
      p.addcdiv_(g, sum.sqrt().add_(o.eps.value), -clr);
    }
  }
}

}  // namespace anvil::nn::optim
