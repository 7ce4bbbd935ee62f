#pragma once
/// @file
/// RMSNorm over the trailing dims given by normalized_shape: a one-liner over
/// rms_norm with PyTorch's learnable weight.
///
///     auto rms = std::make_shared<nn::RMSNorm>(nn::RMSNormOptions({512}).eps(1e-6));
#include <cstdint>
#include <optional>

#include "core/base/option_field.h"
#include "nn/module.h"

namespace anvil::nn {

/// RMSNorm's settings, as libtorch's nn::RMSNormOptions.
struct RMSNormOptions {
  ANVIL_OPTION(RMSNormOptions, Shape, normalized_shape) = {};  ///< the trailing dims normalised over
  ANVIL_OPTION(RMSNormOptions, std::optional<double>, eps) = std::nullopt;  ///< default: the dtype's epsilon
  ANVIL_OPTION(RMSNormOptions, bool, elementwise_affine) = true;  ///< weight (ones) [normalized_shape]
};

/// Root-mean-square normalisation over the trailing dims, as torch.nn.RMSNorm.
class RMSNorm : public Module {
 public:
  explicit RMSNorm(const RMSNormOptions& options);  ///< As `options` say.
  /// Over the last dim, of size `normalized_size`.
  explicit RMSNorm(int64_t normalized_size) : RMSNorm(RMSNormOptions{.normalized_shape = {normalized_size}}) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();  ///< Weight 1.

  RMSNormOptions options;  ///< the settings it was built with
  Tensor weight;  ///< [normalized_shape], when elementwise_affine
};

}  // namespace anvil::nn
