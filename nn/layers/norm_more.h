#pragma once
// GroupNorm over [N, C, *] and RMSNorm over trailing dims: one-liners over
// group_norm and rms_norm with PyTorch's learnable affine parameters.
//
//   auto gn = std::make_shared<nn::GroupNorm>(nn::GroupNormOptions(8, 64));   // 8 groups, 64 channels
//   auto rms = std::make_shared<nn::RMSNorm>(nn::RMSNormOptions({512}).eps(1e-6));
#include <cstdint>
#include <optional>

#include "core/base/option_field.h"
#include "nn/module.h"

namespace anvil::nn {

struct GroupNormOptions {
  ANVIL_OPTION(GroupNormOptions, int64_t, num_groups) = 1;
  ANVIL_OPTION(GroupNormOptions, int64_t, num_channels) = 0;
  ANVIL_OPTION(GroupNormOptions, double, eps) = 1e-5;
  ANVIL_OPTION(GroupNormOptions, bool, affine) = true;  // weight (ones) and bias (zeros) [num_channels]
};

class GroupNorm : public Module {
 public:
  explicit GroupNorm(const GroupNormOptions& options);
  GroupNorm(int64_t num_groups, int64_t num_channels)
      : GroupNorm(GroupNormOptions{.num_groups = num_groups, .num_channels = num_channels}) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();

  GroupNormOptions options;
  Tensor weight, bias;
};

struct RMSNormOptions {
  ANVIL_OPTION(RMSNormOptions, Shape, normalized_shape) = {};
  ANVIL_OPTION(RMSNormOptions, std::optional<double>, eps) = std::nullopt;  // default: the dtype's epsilon
  ANVIL_OPTION(RMSNormOptions, bool, elementwise_affine) = true;  // weight (ones) [normalized_shape]
};

class RMSNorm : public Module {
 public:
  explicit RMSNorm(const RMSNormOptions& options);
  explicit RMSNorm(int64_t normalized_size) : RMSNorm(RMSNormOptions{.normalized_shape = {normalized_size}}) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();

  RMSNormOptions options;
  Tensor weight;
};

}  // namespace anvil::nn
