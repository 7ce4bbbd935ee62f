#include "nn/optim/param_update.h"

#include <cmath>

#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"

namespace anvil::nn::optim::internal {

Tensor update_grad(const Tensor& param, bool maximize, double weight_decay, const std::string& op) {
  const Tensor grad = param.grad();
  ANVIL_CHECK(grad.shape() == param.shape() && grad.device() == param.device(), op, ": gradient ",
              anvil::detail::describe(grad), " does not match parameter ", anvil::detail::describe(param));
  Tensor g = grad.detach();
  if (g.dtype() != param.dtype()) g = g.to(param.dtype());
  g = maximize ? neg(g) : g.clone();  // a copy: the update may change it in place
  if (weight_decay != 0.0) g.add_(param.detach(), weight_decay);
  return g;
}

Tensor& state_buffer(ParamState& state, const std::string& name, const Tensor& param, double fill) {
  auto it = state.buffers.find(name);
  if (it == state.buffers.end())
    it = state.buffers.emplace(name, full(param.shape(), Scalar(fill), param.options())).first;
  return it->second;
}

void check_lr(const std::string& optimizer, double lr) {
  ANVIL_CHECK(std::isfinite(lr) && lr >= 0, optimizer, ": invalid learning rate ", lr, " (expected >= 0)");
}

void check_non_negative(const std::string& optimizer, const char* what, double value) {
  ANVIL_CHECK(value >= 0, optimizer, ": invalid ", what, " ", value, " (expected >= 0)");
}

void check_betas(const std::string& optimizer, double beta1, double beta2) {
  ANVIL_CHECK(beta1 >= 0 && beta1 < 1, optimizer, ": invalid beta1 ", beta1, " (expected in [0, 1))");
  ANVIL_CHECK(beta2 >= 0 && beta2 < 1, optimizer, ": invalid beta2 ", beta2, " (expected in [0, 1))");
}

}  // namespace anvil::nn::optim::internal
