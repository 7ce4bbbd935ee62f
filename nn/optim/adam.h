#pragma once
/// @file
/// Adam and AdamW, torch.optim.Adam / AdamW's update (t = the parameter's step, from 1):
///
///     g = grad (or -grad when maximize)
///     Adam:  g += weight_decay * p          (L2 penalty through the moments)
///     AdamW: p *= 1 - lr * weight_decay     (decoupled weight decay)
///     m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g^2
///     p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
/// amsgrad=true (AMSGrad) divides by sqrt(v_max) instead, v_max = max(v_max, v).
/// State per parameter: "exp_avg" (m), "exp_avg_sq" (v), with amsgrad
/// "max_exp_avg_sq" (v_max), and the step count.
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// Adam's hyper-parameters, with PyTorch's defaults (as libtorch's optim::AdamOptions).
struct AdamOptions {
  ANVIL_OPTION(AdamOptions, double, lr) = 1e-3;  ///< learning rate
  ANVIL_OPTION(AdamOptions, double, beta1) = 0.9;  ///< decay of the running mean of gradients (m)
  ANVIL_OPTION(AdamOptions, double, beta2) = 0.999;  ///< decay of the running mean of squared gradients (v)
  ANVIL_OPTION(AdamOptions, double, eps) = 1e-8;  ///< added to the denominator for numerical stability
  ANVIL_OPTION(AdamOptions, double, weight_decay) = 0.0;  ///< L2 penalty added to the gradient
  ANVIL_OPTION(AdamOptions, bool, maximize) = false;  ///< ascend the objective instead
  ANVIL_OPTION(AdamOptions, bool, amsgrad) = false;  ///< AMSGrad, as libtorch's option
  /// libtorch's spelling of beta1 and beta2: AdamOptions(1e-3).betas({0.9, 0.98}).
  AdamOptions& betas(std::tuple<double, double> b) {
    std::tie(beta1, beta2) = b;
    return *this;
  }

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// The same settings; only the default weight decay differs (as in PyTorch).
struct AdamWOptions {
  ANVIL_OPTION(AdamWOptions, double, lr) = 1e-3;  ///< learning rate
  ANVIL_OPTION(AdamWOptions, double, beta1) = 0.9;  ///< decay of the running mean of gradients (m)
  ANVIL_OPTION(AdamWOptions, double, beta2) = 0.999;  ///< decay of the running mean of squared gradients (v)
  ANVIL_OPTION(AdamWOptions, double, eps) = 1e-8;  ///< added to the denominator for numerical stability
  ANVIL_OPTION(AdamWOptions, double, weight_decay) = 1e-2;  ///< decoupled weight decay: p *= 1 - lr * weight_decay
  ANVIL_OPTION(AdamWOptions, bool, maximize) = false;  ///< ascend the objective instead
  ANVIL_OPTION(AdamWOptions, bool, amsgrad) = false;  ///< AMSGrad, as libtorch's option
  /// Sets beta1 and beta2 at once, as libtorch's betas option.
  AdamWOptions& betas(std::tuple<double, double> b) {
    std::tie(beta1, beta2) = b;
    return *this;
  }

  /// Throws naming `optimizer` and the setting when one is out of range.
  void validate(const std::string& optimizer) const;
  HyperParams named() const;  ///< The settings by name, as PyTorch's param_groups entries hold them.
  bool set_named(std::string_view name, double value);  ///< Sets the setting called `name`; false when there is none.
};

/// Adam, as torch.optim.Adam: adaptive moments with an L2 penalty through the gradient (see the file comment).
class Adam : public OptimizerWith<AdamOptions> {
 public:
  explicit Adam(std::vector<Tensor> params, AdamOptions options = {});  ///< Optimizes `params` with `options`.
  /// Optimizes each group with its own options, or `defaults`.
  explicit Adam(std::vector<Group> groups, AdamOptions defaults = {});
  void step() override;
};

/// AdamW, as torch.optim.AdamW: Adam with decoupled weight decay (see the file comment).
class AdamW : public OptimizerWith<AdamWOptions> {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});  ///< Optimizes `params` with `options`.
  /// Optimizes each group with its own options, or `defaults`.
  explicit AdamW(std::vector<Group> groups, AdamWOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
