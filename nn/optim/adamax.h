#pragma once
/// @file
/// Adamax (Adam with the infinity norm), torch.optim.Adamax's update (t from 1):
///
///     g = grad (or -grad when maximize) + weight_decay * p
///     m = beta1 * m + (1 - beta1) * g;  u = max(beta2 * u, |g| + eps)
///     p -= lr / (1 - beta1^t) * m / u
/// State per parameter: "exp_avg" (m), "exp_inf" (u) and the step count.
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// Adamax's hyper-parameters, with PyTorch's defaults (as libtorch's optim::AdamaxOptions).
struct AdamaxOptions {
  ANVIL_OPTION(AdamaxOptions, double, lr) = 2e-3;  ///< learning rate
  ANVIL_OPTION(AdamaxOptions, double, beta1) = 0.9;  ///< decay of the running mean of gradients (m)
  ANVIL_OPTION(AdamaxOptions, double, beta2) = 0.999;  ///< decay of the infinity norm (u)
  ANVIL_OPTION(AdamaxOptions, double, eps) = 1e-8;  ///< added to the denominator for numerical stability
  ANVIL_OPTION(AdamaxOptions, double, weight_decay) = 0.0;  ///< L2 penalty added to the gradient
  ANVIL_OPTION(AdamaxOptions, bool, maximize) = false;  ///< ascend the objective instead
  /// Sets beta1 and beta2 at once, as libtorch's betas option.
  AdamaxOptions& betas(std::tuple<double, double> b) {
    std::tie(beta1, beta2) = b;
    return *this;
  }

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// Adamax, as torch.optim.Adamax: Adam with the infinity norm (see the file comment).
class Adamax : public OptimizerWith<AdamaxOptions> {
 public:
  explicit Adamax(std::vector<Tensor> params, AdamaxOptions options = {});  ///< Optimizes `params` with `options`.
  /// Optimizes each group with its own options, or `defaults`.
  explicit Adamax(std::vector<Group> groups, AdamaxOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
