#pragma once
/// @file
/// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"),
/// the update of the paper and of lion-pytorch (PyTorch has no Lion):
///
///     g = grad (or -grad when maximize)
///     p *= 1 - lr * weight_decay                  (decoupled, as AdamW)
///     p -= lr * sign(beta1 * m + (1 - beta1) * g)
///     m = beta2 * m + (1 - beta2) * g
/// State per parameter: "exp_avg" (m) and the step count. Lion's lr is
/// typically 3-10x smaller than AdamW's and its weight decay larger.
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// Lion's hyper-parameters, with PyTorch's defaults (as libtorch's optim::LionOptions).
struct LionOptions {
  ANVIL_OPTION(LionOptions, double, lr) = 1e-4;  ///< learning rate
  ANVIL_OPTION(LionOptions, double,
               beta1) = 0.9;  ///< interpolation between momentum and gradient for the update's sign
  ANVIL_OPTION(LionOptions, double, beta2) = 0.99;  ///< decay of the momentum (m)
  ANVIL_OPTION(LionOptions, double, weight_decay) = 0.0;  ///< decoupled weight decay: p *= 1 - lr * weight_decay
  ANVIL_OPTION(LionOptions, bool, maximize) = false;  ///< ascend the objective instead
  /// Sets beta1 and beta2 at once, as libtorch's betas option.
  LionOptions& betas(std::tuple<double, double> b) {
    std::tie(beta1, beta2) = b;
    return *this;
  }

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// Lion: the sign of an interpolated momentum, with decoupled weight decay (see the file comment).
class Lion : public OptimizerWith<LionOptions> {
 public:
  explicit Lion(std::vector<Tensor> params, LionOptions options = {});  ///< Optimizes `params` with `options`.
  /// Optimizes each group with its own options, or `defaults`.
  explicit Lion(std::vector<Group> groups, LionOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
