#pragma once
/// @file
/// Adagrad, torch.optim.Adagrad's update (t = the parameter's step, from 1):
///
///     g = grad (or -grad when maximize) + weight_decay * p
///     clr = lr / (1 + (t - 1) * lr_decay)
///     sum += g^2;  p -= clr * g / (sqrt(sum) + eps)
/// State per parameter: "sum" (starting at initial_accumulator_value) and the step count.
#include <string>
#include <string_view>
#include <vector>

#include "core/base/option_field.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

struct AdagradOptions {
  ANVIL_OPTION(AdagradOptions, double, lr) = 1e-2;
  ANVIL_OPTION(AdagradOptions, double, lr_decay) = 0.0;
  ANVIL_OPTION(AdagradOptions, double, weight_decay) = 0.0;
  ANVIL_OPTION(AdagradOptions, double, initial_accumulator_value) = 0.0;
  ANVIL_OPTION(AdagradOptions, double, eps) = 1e-10;
  ANVIL_OPTION(AdagradOptions, bool, maximize) = false;

  void validate(const std::string& optimizer) const;
  HyperParams named() const;
  bool set_named(std::string_view name, double value);
};

class Adagrad : public OptimizerWith<AdagradOptions> {
 public:
  explicit Adagrad(std::vector<Tensor> params, AdagradOptions options = {});
  explicit Adagrad(std::vector<Group> groups, AdagradOptions defaults = {});
  void step() override;
};

}  // namespace anvil::nn::optim
