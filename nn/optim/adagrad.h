#pragma once
/// @file
/// Adagrad, torch.optim.Adagrad's update (t = the parameter's step, from 1):
///
///     g = grad (or -grad when maximize) + weight_decay * p
///     clr = lr / (1 + (t - 1) * lr_decay)
///     sum += g^2;  p -= clr * g / (sqrt(sum) + eps)
/// State per parameter: "sum" (starting at initial_accumulator_value) and the step count.
#include <string>
#include <string_view>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// Adagrad's hyper-parameters, with PyTorch's defaults (as libtorch's optim::AdagradOptions).
struct AdagradOptions {
  ANVIL_OPTION(AdagradOptions, double, lr) = 1e-2;  ///< learning rate
  ANVIL_OPTION(AdagradOptions, double, lr_decay) = 0.0;  ///< lr / (1 + (t - 1) * lr_decay) at step t
  ANVIL_OPTION(AdagradOptions, double, weight_decay) = 0.0;  ///< L2 penalty added to the gradient
  /// the starting value of the sum of squared gradients
  ANVIL_OPTION(AdagradOptions, double, initial_accumulator_value) = 0.0;
  ANVIL_OPTION(AdagradOptions, double, eps) = 1e-10;  ///< added to the denominator for numerical stability
  ANVIL_OPTION(AdagradOptions, bool, maximize) = false;  ///< ascend the objective instead

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// Adagrad, as torch.optim.Adagrad: per-element rates from the sum of squared gradients (see the file comment).
class Adagrad : public OptimizerWith<AdagradOptions> {
 public:
  explicit Adagrad(std::vector<Tensor> params, AdagradOptions options = {});  ///< Optimizes `params` with `options`.
  /// Optimizes each group with its own options, or `defaults`.
  explicit Adagrad(std::vector<Group> groups, AdagradOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
