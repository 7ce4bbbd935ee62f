#pragma once
/// @file
/// LayerNorm over the trailing dims given by normalized_shape.
#include <cstdint>

#include "core/base/option_field.h"
#include "nn/module.h"

namespace anvil::nn {

struct LayerNormOptions {
  ANVIL_OPTION(LayerNormOptions, Shape, normalized_shape) = {};
  ANVIL_OPTION(LayerNormOptions, double, eps) = 1e-5;
  ANVIL_OPTION(LayerNormOptions, bool, elementwise_affine) = true;  ///< learnable weight (ones) and bias (zeros)
  /// With elementwise_affine: whether to learn a bias too.
  ANVIL_OPTION(LayerNormOptions, bool, bias) = true;
};

class LayerNorm : public Module {
 public:
  /// (An int overload: Shape(n) would otherwise make n zeros.)
  explicit LayerNorm(int64_t normalized_size) : LayerNorm(LayerNormOptions{.normalized_shape = {normalized_size}}) {}
  explicit LayerNorm(const LayerNormOptions& options);

  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();

  LayerNormOptions options;
  ///@{
  /// normalized_shape, when elementwise_affine
  Tensor weight, bias;
  ///@}
};

}  // namespace anvil::nn
