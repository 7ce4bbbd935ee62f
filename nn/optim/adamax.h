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

struct AdamaxOptions {
  ANVIL_OPTION(AdamaxOptions, double, lr) = 2e-3;
  ANVIL_OPTION(AdamaxOptions, double, beta1) = 0.9;
  ANVIL_OPTION(AdamaxOptions, double, beta2) = 0.999;
  ANVIL_OPTION(AdamaxOptions, double, eps) = 1e-8;
  ANVIL_OPTION(AdamaxOptions, double, weight_decay) = 0.0;
  ANVIL_OPTION(AdamaxOptions, bool, maximize) = false;
  AdamaxOptions& betas(std::tuple<double, double> b) {
    std::tie(beta1, beta2) = b;
    return *this;
  }

  void validate(const std::string& optimizer) const;
  HyperParams named() const;
  bool set_named(std::string_view name, double value);
};

class Adamax : public OptimizerWith<AdamaxOptions> {
 public:
  explicit Adamax(std::vector<Tensor> params, AdamaxOptions options = {});
  explicit Adamax(std::vector<Group> groups, AdamaxOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
