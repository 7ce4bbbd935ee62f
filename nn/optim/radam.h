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

struct RAdamOptions {
  ANVIL_OPTION(RAdamOptions, double, lr) = 1e-3;
  ANVIL_OPTION(RAdamOptions, double, beta1) = 0.9;
  ANVIL_OPTION(RAdamOptions, double, beta2) = 0.999;
  ANVIL_OPTION(RAdamOptions, double, eps) = 1e-8;
  ANVIL_OPTION(RAdamOptions, double, weight_decay) = 0.0;
  ANVIL_OPTION(RAdamOptions, bool, decoupled_weight_decay) = false;
  ANVIL_OPTION(RAdamOptions, bool, maximize) = false;
  RAdamOptions& betas(std::tuple<double, double> b) {
    std::tie(beta1, beta2) = b;
    return *this;
  }

  void validate(const std::string& optimizer) const;
  HyperParams named() const;
  bool set_named(std::string_view name, double value);
};

class RAdam : public OptimizerWith<RAdamOptions> {
 public:
  explicit RAdam(std::vector<Tensor> params, RAdamOptions options = {});
  explicit RAdam(std::vector<Group> groups, RAdamOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
