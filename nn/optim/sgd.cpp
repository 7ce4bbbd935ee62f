#include "nn/optim/sgd.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops/optim/fused_optim.h"
#include "nn/optim/multi_tensor.h"

namespace anvil::nn::optim {

void SGDOptions::validate(const std::string& optimizer) const {
  ANVIL_CHECK(std::isfinite(lr) && lr >= 0, optimizer, ": invalid learning rate ", lr, " (expected >= 0)");
  ANVIL_CHECK(momentum >= 0, optimizer, ": invalid momentum ", momentum, " (expected >= 0)");
  ANVIL_CHECK(weight_decay >= 0, optimizer, ": invalid weight_decay ", weight_decay, " (expected >= 0)");
  ANVIL_CHECK(!nesterov || (momentum > 0 && dampening == 0), optimizer,
              ": Nesterov momentum requires momentum > 0 and dampening == 0, got momentum ", momentum,
              " and dampening ", dampening);
}

HyperParams SGDOptions::named() const {
  return {{"lr", lr},
          {"momentum", momentum},
          {"dampening", dampening},
          {"weight_decay", weight_decay},
          {"nesterov", nesterov ? 1.0 : 0.0},
          {"maximize", maximize ? 1.0 : 0.0}};
}

bool SGDOptions::set_named(std::string_view name, double value) {
  if (name == "lr")
    lr = value;
  else if (name == "momentum")
    momentum = value;
  else if (name == "dampening")
    dampening = value;
  else if (name == "weight_decay")
    weight_decay = value;
  else if (name == "nesterov")
    nesterov = value != 0;
  else if (name == "maximize")
    maximize = value != 0;
  else
    return false;
  return true;
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : SGD(std::vector<Group>{Group(std::move(params))}, options) {}

SGD::SGD(std::vector<Group> groups, SGDOptions defaults) : OptimizerWith("SGD", std::move(groups), defaults) {}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t g = 0; g < num_param_groups(); ++g) {
    const SGDOptions& o = options(g);
    const bool use_momentum = o.momentum != 0.0;
    // Key 1: parameters whose momentum buffer starts now (the kernel copies d into it).
    internal::Batches batches;
    for (const Tensor& p : params(g)) {
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      ParamState& s = state_for(p);
      std::vector<Tensor> states;
      bool first = false;
      if (use_momentum) {
        auto it = s.buffers.find("momentum_buffer");
        first = it == s.buffers.end();
        if (first) it = s.buffers.emplace("momentum_buffer", zeros(p.shape(), p.options())).first;
        states.push_back(it->second);
      }
      ++s.step;
      internal::batch_for(batches, internal::batch_key(p, first ? 1 : 0), states.size())
          .add(p, grad, states, o.maximize, "SGD.step");
    }
    for (auto& [key, batch] : batches) {
      SGDParams hp;
      hp.lr = o.lr;
      hp.momentum = o.momentum;
      hp.dampening = o.dampening;
      hp.weight_decay = o.weight_decay;
      hp.nesterov = o.nesterov;
      hp.first_step = std::get<3>(key) == 1;
      fused_sgd_(batch.params(), batch.grads(), use_momentum ? batch.states(0) : std::vector<Tensor>{}, hp);
      batch.finish();
    }
  }
}

}  // namespace anvil::nn::optim
