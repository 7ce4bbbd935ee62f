#include "nn/optim/adadelta.h"

#include "core/autograd/grad_mode.h"
#include "nn/optim/param_update.h"

namespace anvil::nn::optim {

void AdadeltaOptions::validate(const std::string& optimizer) const {
  internal::check_lr(optimizer, lr);
  ANVIL_CHECK(rho >= 0 && rho <= 1, optimizer, ": invalid rho ", rho, " (expected in [0, 1])");
  internal::check_non_negative(optimizer, "eps", eps);
  internal::check_non_negative(optimizer, "weight_decay", weight_decay);
}

HyperParams AdadeltaOptions::named() const {
  return {{"lr", lr}, {"rho", rho}, {"eps", eps}, {"weight_decay", weight_decay}, {"maximize", maximize ? 1.0 : 0.0}};
}

bool AdadeltaOptions::set_named(std::string_view name, double value) {
  if (name == "lr")
    lr = value;
  else if (name == "rho")
    rho = value;
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

Adadelta::Adadelta(std::vector<Tensor> params, AdadeltaOptions options)
    : Adadelta(std::vector<Group>{Group(std::move(params))}, options) {}
Adadelta::Adadelta(std::vector<Group> groups, AdadeltaOptions defaults)
    : OptimizerWith("Adadelta", std::move(groups), defaults) {}

// PyTorch's single-tensor loop, op for op (so the two round alike): the two
// state updates in place, delta and the root of v + eps as temporaries.
void Adadelta::step() {
  NoGradGuard no_grad;
  for (size_t gi = 0; gi < num_param_groups(); ++gi) {
    const AdadeltaOptions& o = options(gi);
    for (Tensor p : params(gi)) {
      if (!p.grad().defined()) continue;
      Tensor g = internal::update_grad(p, o.maximize, o.weight_decay, "Adadelta.step");
      ParamState& s = state_for(p);
      ++s.step;
      Tensor& square_avg = internal::state_buffer(s, "square_avg", p);
      Tensor& acc_delta = internal::state_buffer(s, "acc_delta", p);
      square_avg.mul_(o.rho.value).addcmul_(g, g, 1.0 - o.rho);
      const Tensor rms_grad = square_avg.add(o.eps.value).sqrt();
      Tensor delta = acc_delta.add(o.eps.value).sqrt();
      delta.div_(rms_grad).mul_(g);
      acc_delta.mul_(o.rho.value).addcmul_(delta, delta, 1.0 - o.rho);
      p.add_(delta, -o.lr);
    }
  }
}

}  // namespace anvil::nn::optim
