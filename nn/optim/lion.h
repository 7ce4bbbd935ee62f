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

struct LionOptions {
  ANVIL_OPTION(LionOptions, double, lr) = 1e-4;
  ANVIL_OPTION(LionOptions, double, beta1) = 0.9;
  ANVIL_OPTION(LionOptions, double, beta2) = 0.99;
  ANVIL_OPTION(LionOptions, double, weight_decay) = 0.0;
  ANVIL_OPTION(LionOptions, bool, maximize) = false;
  LionOptions& betas(std::tuple<double, double> b) {
    std::tie(beta1, beta2) = b;
    return *this;
  }

  void validate(const std::string& optimizer) const;
  HyperParams named() const;
  bool set_named(std::string_view name, double value);
};

class Lion : public OptimizerWith<LionOptions> {
 public:
  explicit Lion(std::vector<Tensor> params, LionOptions options = {});
  explicit Lion(std::vector<Group> groups, LionOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
