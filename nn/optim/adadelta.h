#pragma once
/// @file
/// Adadelta (Zeiler 2012), torch.optim.Adadelta's update:
///
///     g = grad (or -grad when maximize) + weight_decay * p
///     v = rho * v + (1 - rho) * g^2
///     delta = sqrt(u + eps) / sqrt(v + eps) * g
///     u = rho * u + (1 - rho) * delta^2
///     p -= lr * delta
/// The step's size comes from the running mean of past updates (u), so lr is
/// a scale on it (1.0, PyTorch's default, is the paper's method). State per
/// parameter: "square_avg" (v), "acc_delta" (u) and the step count.
#include <string>
#include <string_view>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// Adadelta's hyper-parameters, with PyTorch's defaults (as libtorch's optim::AdadeltaOptions).
struct AdadeltaOptions {
  ANVIL_OPTION(AdadeltaOptions, double, lr) = 1.0;  ///< learning rate
  /// decay of the running means of squared gradients and of squared updates
  ANVIL_OPTION(AdadeltaOptions, double, rho) = 0.9;
  ANVIL_OPTION(AdadeltaOptions, double, eps) = 1e-6;  ///< added to the denominator for numerical stability
  ANVIL_OPTION(AdadeltaOptions, double, weight_decay) = 0.0;  ///< L2 penalty added to the gradient
  ANVIL_OPTION(AdadeltaOptions, bool, maximize) = false;  ///< ascend the objective instead

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// Adadelta, as torch.optim.Adadelta (see the file comment).
class Adadelta : public OptimizerWith<AdadeltaOptions> {
 public:
  explicit Adadelta(std::vector<Tensor> params, AdadeltaOptions options = {});  ///< Optimizes `params` with `options`.
  /// Optimizes each group with its own options, or `defaults`.
  explicit Adadelta(std::vector<Group> groups, AdadeltaOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
