#pragma once
/// @file
/// RMSprop, torch.optim.RMSprop's update:
///
///     g = grad (or -grad when maximize) + weight_decay * p
///     v = alpha * v + (1 - alpha) * g^2
///     centered: g_avg = alpha * g_avg + (1 - alpha) * g;  avg = sqrt(v - g_avg^2) + eps
///     else:     avg = sqrt(v) + eps
///     momentum > 0: buf = momentum * buf + g / avg;  p -= lr * buf
///     else:         p -= lr * g / avg
/// State per parameter: "square_avg", "momentum_buffer" (momentum > 0),
/// "grad_avg" (centered) and the step count.
#include <string>
#include <string_view>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// RMSprop's hyper-parameters, with PyTorch's defaults (as libtorch's optim::RMSpropOptions).
struct RMSpropOptions {
  ANVIL_OPTION(RMSpropOptions, double, lr) = 1e-2;  ///< learning rate
  ANVIL_OPTION(RMSpropOptions, double, alpha) = 0.99;  ///< decay of the running mean of squared gradients
  ANVIL_OPTION(RMSpropOptions, double, eps) = 1e-8;  ///< added to the denominator for numerical stability
  ANVIL_OPTION(RMSpropOptions, double, weight_decay) = 0.0;  ///< L2 penalty added to the gradient
  ANVIL_OPTION(RMSpropOptions, double, momentum) = 0.0;  ///< momentum factor (0: none)
  /// divide by the gradient's estimated variance rather than its second moment
  ANVIL_OPTION(RMSpropOptions, bool, centered) = false;
  ANVIL_OPTION(RMSpropOptions, bool, maximize) = false;  ///< ascend the objective instead

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// RMSprop, as torch.optim.RMSprop (see the file comment).
class RMSprop : public OptimizerWith<RMSpropOptions> {
 public:
  explicit RMSprop(std::vector<Tensor> params, RMSpropOptions options = {});  ///< Optimizes `params` with `options`.
  /// Optimizes each group with its own options, or `defaults`.
  explicit RMSprop(std::vector<Group> groups, RMSpropOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
