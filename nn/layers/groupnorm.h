#pragma once
/// @file
/// GroupNorm over [N, C, *]: a one-liner over group_norm with PyTorch's
/// learnable affine parameters.
///
///     auto gn = std::make_shared<nn::GroupNorm>(nn::GroupNormOptions(8, 64));   // 8 groups, 64 channels
#include <cstdint>

#include "core/base/option_field.h"
#include "nn/module.h"

namespace anvil::nn {

/// GroupNorm's settings, as libtorch's nn::GroupNormOptions.
struct GroupNormOptions {
  ANVIL_OPTION(GroupNormOptions, int64_t, num_groups) = 1;  ///< groups the channels are split into
  ANVIL_OPTION(GroupNormOptions, int64_t, num_channels) = 0;  ///< C; must divide by num_groups
  ANVIL_OPTION(GroupNormOptions, double, eps) = 1e-5;  ///< added to the variance for numerical stability
  ANVIL_OPTION(GroupNormOptions, bool, affine) = true;  ///< weight (ones) and bias (zeros) [num_channels]
};

/// Group normalisation over [N, C, *], as torch.nn.GroupNorm.
class GroupNorm : public Module {
 public:
  explicit GroupNorm(const GroupNormOptions& options);  ///< As `options` say.
  /// `num_groups` groups over `num_channels` channels, affine.
  GroupNorm(int64_t num_groups, int64_t num_channels)
      : GroupNorm(GroupNormOptions{.num_groups = num_groups, .num_channels = num_channels}) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();  ///< Weight 1, bias 0.

  GroupNormOptions options;  ///< the settings it was built with
  ///@{
  /// [num_channels] each, when affine
  Tensor weight, bias;
  ///@}
};

}  // namespace anvil::nn
