#pragma once
/// @file
/// SGD with momentum, dampening, Nesterov momentum and (L2) weight decay,
/// torch.optim.SGD's update:
///
///     d = g (or -g when maximize) + weight_decay * p
///     with momentum: buf = d on the first step, else momentum * buf + (1 - dampening) * d
///                    d = nesterov ? d + momentum * buf : buf
///     p -= lr * d
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// SGD's hyper-parameters, with PyTorch's defaults (as libtorch's optim::SGDOptions).
struct SGDOptions {
  ANVIL_OPTION(SGDOptions, double, lr) = 1e-3;  ///< PyTorch's default since 2.0
  ANVIL_OPTION(SGDOptions, double, momentum) = 0.0;  ///< momentum factor (0: none)
  ANVIL_OPTION(SGDOptions, double, dampening) = 0.0;  ///< dampening of momentum's new term
  ANVIL_OPTION(SGDOptions, double, weight_decay) = 0.0;  ///< L2 penalty added to the gradient
  ANVIL_OPTION(SGDOptions, bool, nesterov) = false;  ///< needs momentum > 0 and dampening == 0
  ANVIL_OPTION(SGDOptions, bool, maximize) = false;  ///< ascend the objective instead

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// Stochastic gradient descent with momentum, as torch.optim.SGD (see the file comment).
class SGD : public OptimizerWith<SGDOptions> {
 public:
  explicit SGD(std::vector<Tensor> params, SGDOptions options = {});  ///< Optimizes `params` with `options`.
  /// libtorch's SGD(params, /*lr=*/0.01). A template, so SGD(params, {}) still
  /// means the default options rather than lr 0.
  template <typename Lr>
  requires std::is_arithmetic_v<Lr> SGD(std::vector<Tensor> params, Lr lr)
      : SGD(std::move(params), SGDOptions().lr(static_cast<double>(lr))) {}
  /// Optimizes each group with its own options, or `defaults`.
  explicit SGD(std::vector<Group> groups, SGDOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
