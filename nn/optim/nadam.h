#pragma once
/// @file
/// NAdam (Adam with Nesterov momentum), torch.optim.NAdam's update (t from 1):
///
///     g = grad (or -grad when maximize)
///     L2: g += weight_decay * p;  decoupled_weight_decay: p *= 1 - lr * weight_decay
///     mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)), mu_{t+1} likewise
///     mu_product *= mu_t
///     m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
///     denom = sqrt(v / (1 - beta2^t)) + eps
///     p -= lr * (1 - mu_t) / (1 - mu_product) * g / denom
///     p -= lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / denom
/// State per parameter: "exp_avg", "exp_avg_sq", the scalar "mu_product" and the step count.
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// NAdam's hyper-parameters, with PyTorch's defaults (as libtorch's optim::NAdamOptions).
struct NAdamOptions {
  ANVIL_OPTION(NAdamOptions, double, lr) = 2e-3;  ///< learning rate
  ANVIL_OPTION(NAdamOptions, double, beta1) = 0.9;  ///< decay of the running mean of gradients (m)
  ANVIL_OPTION(NAdamOptions, double, beta2) = 0.999;  ///< decay of the running mean of squared gradients (v)
  ANVIL_OPTION(NAdamOptions, double, eps) = 1e-8;  ///< added to the denominator for numerical stability
  /// weight decay (an L2 penalty, or decoupled with decoupled_weight_decay)
  ANVIL_OPTION(NAdamOptions, double, weight_decay) = 0.0;
  ANVIL_OPTION(NAdamOptions, double, momentum_decay) = 4e-3;  ///< how fast mu_t approaches beta1 (psi in the paper)
  /// decay the weights directly (as AdamW) instead of adding an L2 term to the gradient
  ANVIL_OPTION(NAdamOptions, bool, decoupled_weight_decay) = false;
  ANVIL_OPTION(NAdamOptions, bool, maximize) = false;  ///< ascend the objective instead
  /// Sets beta1 and beta2 at once, as libtorch's betas option.
  NAdamOptions& betas(std::tuple<double, double> b) {
    std::tie(beta1, beta2) = b;
    return *this;
  }

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// NAdam, as torch.optim.NAdam: Adam with Nesterov momentum (see the file comment).
class NAdam : public OptimizerWith<NAdamOptions> {
 public:
  explicit NAdam(std::vector<Tensor> params, NAdamOptions options = {});  ///< Optimizes `params` with `options`.
  /// Optimizes each group with its own options, or `defaults`.
  explicit NAdam(std::vector<Group> groups, NAdamOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
