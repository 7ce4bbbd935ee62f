#pragma once
/// @file
/// LayerNorm over the trailing dims given by normalized_shape.
#include <cstdint>

#include "core/base/option_field.h"
#include "nn/module.h"

namespace anvil::nn {

/// LayerNorm's settings, as libtorch's nn::LayerNormOptions.
struct LayerNormOptions {
  ANVIL_OPTION(LayerNormOptions, Shape, normalized_shape) = {};  ///< the trailing dims normalised over
  ANVIL_OPTION(LayerNormOptions, double, eps) = 1e-5;  ///< added to the variance for numerical stability
  ANVIL_OPTION(LayerNormOptions, bool, elementwise_affine) = true;  ///< learnable weight (ones) and bias (zeros)
  /// With elementwise_affine: whether to learn a bias too.
  ANVIL_OPTION(LayerNormOptions, bool, bias) = true;
};

/// Layer normalisation over the trailing dims, as torch.nn.LayerNorm.
class LayerNorm : public Module {
 public:
  /// (An int overload: Shape(n) would otherwise make n zeros.)
  explicit LayerNorm(int64_t normalized_size) : LayerNorm(LayerNormOptions{.normalized_shape = {normalized_size}}) {}
  explicit LayerNorm(const LayerNormOptions& options);  ///< As `options` say.

  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();  ///< Weight 1, bias 0.

  LayerNormOptions options;  ///< the settings it was built with
  ///@{
  /// normalized_shape, when elementwise_affine
  Tensor weight, bias;
  ///@}
};

}  // namespace anvil::nn
