#pragma once
/// @file
/// RAdam (rectified Adam), torch.optim.RAdam's update (t from 1):
///
///     g = grad (or -grad when maximize)
///     L2: g += weight_decay * p;  decoupled_weight_decay: p *= 1 - lr * weight_decay
///     m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
///     rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
///     m_hat = m / (1 - beta1^t)
///     rho_t > 5: r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
///                p -= lr * m_hat * r * sqrt(1 - beta2^t) / (sqrt(v) + eps)
///     else:      p -= lr * m_hat   (the variance is not yet tractable: SGD with momentum)
/// State per parameter: "exp_avg", "exp_avg_sq" and the step count.
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// RAdam's hyper-parameters, with PyTorch's defaults (as libtorch's optim::RAdamOptions).
struct RAdamOptions {
  ANVIL_OPTION(RAdamOptions, double, lr) = 1e-3;  ///< learning rate
  ANVIL_OPTION(RAdamOptions, double, beta1) = 0.9;  ///< decay of the running mean of gradients (m)
  ANVIL_OPTION(RAdamOptions, double, beta2) = 0.999;  ///< decay of the running mean of squared gradients (v)
  ANVIL_OPTION(RAdamOptions, double, eps) = 1e-8;  ///< added to the denominator for numerical stability
  /// weight decay (an L2 penalty, or decoupled with decoupled_weight_decay)
  ANVIL_OPTION(RAdamOptions, double, weight_decay) = 0.0;
  /// decay the weights directly (as AdamW) instead of adding an L2 term to the gradient
  ANVIL_OPTION(RAdamOptions, bool, decoupled_weight_decay) = false;
  ANVIL_OPTION(RAdamOptions, bool, maximize) = false;  ///< ascend the objective instead
  /// Sets beta1 and beta2 at once, as libtorch's betas option.
  RAdamOptions& betas(std::tuple<double, double> b) {
    std::tie(beta1, beta2) = b;
    return *this;
  }

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// RAdam, as torch.optim.RAdam: Adam with the variance of the adaptive rate rectified (see the file comment).
class RAdam : public OptimizerWith<RAdamOptions> {
 public:
  explicit RAdam(std::vector<Tensor> params, RAdamOptions options = {});  ///< Optimizes `params` with `options`.
  /// Optimizes each group with its own options, or `defaults`.
  explicit RAdam(std::vector<Group> groups, RAdamOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
