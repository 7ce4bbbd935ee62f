#include "nn/optim/rmsprop.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/ops/elementwise.h"
#include "nn/optim/param_update.h"

namespace anvil::nn::optim {

void RMSpropOptions::validate(const std::string& optimizer) const {
  ANVIL_CHECK(std::isfinite(lr) && lr >= 0, optimizer, ": invalid learning rate ", lr, " (expected >= 0)");
  ANVIL_CHECK(alpha >= 0, optimizer, ": invalid alpha ", alpha, " (expected >= 0)");
  ANVIL_CHECK(eps >= 0, optimizer, ": invalid eps ", eps, " (expected >= 0)");
  ANVIL_CHECK(momentum >= 0, optimizer, ": invalid momentum ", momentum, " (expected >= 0)");
  ANVIL_CHECK(weight_decay >= 0, optimizer, ": invalid weight_decay ", weight_decay, " (expected >= 0)");
}

HyperParams RMSpropOptions::named() const {
  return {{"lr", lr},
          {"alpha", alpha},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"momentum", momentum},
          {"centered", centered ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

bool RMSpropOptions::set_named(std::string_view name, double value) {
  if (name == "lr")
    lr = value;
  else if (name == "alpha")
    alpha = value;
  else if (name == "eps")
    eps = value;
  else if (name == "weight_decay")
    weight_decay = value;
  else if (name == "momentum")
    momentum = value;
  else if (name == "centered")
    centered = value != 0;
  else if (name == "maximize")
    maximize = value != 0;
  else
    return false;
  return true;
}

RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions options)
    : RMSprop(std::vector<Group>{Group(std::move(params))}, options) {}
RMSprop::RMSprop(std::vector<Group> groups, RMSpropOptions defaults)
    : OptimizerWith("RMSprop", std::move(groups), defaults) {}

void RMSprop::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < num_param_groups(); ++gi) {
    const RMSpropOptions& o = options(gi);
    for (Tensor p : params(gi)) {
      if (!p.grad().defined()) continue;
      Tensor g = internal::update_grad(p, o.maximize, o.weight_decay, "RMSprop.step");
      ParamState& s = state_for(p);
      ++s.step;
      Tensor& square_avg = internal::state_buffer(s, "square_avg", p);
      square_avg.mul_(o.alpha.value).addcmul_(g, g, 1.0 - o.alpha);
      Tensor avg;
      if (o.centered) {
        Tensor& grad_avg = internal::state_buffer(s, "grad_avg", p);
        grad_avg.lerp_(g, 1.0 - o.alpha);
        avg = addcmul(square_avg, grad_avg, grad_avg, -1.0).sqrt();
      } else {
        avg = square_avg.sqrt();
      }
      avg.add_(o.eps.value);
      if (o.momentum > 0) {
        Tensor& buf = internal::state_buffer(s, "momentum_buffer", p);
        buf.mul_(o.momentum.value).addcdiv_(g, avg);
        p.add_(buf, -o.lr);
      } else {
        p.addcdiv_(g, avg, -o.lr);
      }
    }
  }
}

}  // namespace anvil::nn::optim
