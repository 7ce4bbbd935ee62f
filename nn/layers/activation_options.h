#pragma once
/// @file
/// Options of the parametrised activations, as libtorch spells them: the
/// modules take them (nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)))
/// and nn::functional names them LeakyReLUFuncOptions etc., as libtorch does.
/// Both aggregates ({.alpha = 0.5}) and chained setters (core/base/option_field.h).
#include "core/base/option_field.h"
#include "core/tensor.h"

namespace anvil::nn {

/// LeakyReLU's settings: x below 0 is scaled by negative_slope.
struct LeakyReLUOptions {
  ANVIL_OPTION(LeakyReLUOptions, double, negative_slope) = 0.01;  ///< the slope below 0
  ANVIL_OPTION(LeakyReLUOptions, bool, inplace) = false;  ///< overwrite the input with the result
};
/// ELU's settings: alpha * (exp(x) - 1) below 0.
struct ELUOptions {
  ANVIL_OPTION(ELUOptions, double, alpha) = 1.0;  ///< the scale below 0
  ANVIL_OPTION(ELUOptions, bool, inplace) = false;  ///< overwrite the input with the result
};
/// Softplus's settings: log(1 + exp(beta x)) / beta.
struct SoftplusOptions {
  ANVIL_OPTION(SoftplusOptions, double, beta) = 1.0;  ///< the sharpness of the curve
  ANVIL_OPTION(SoftplusOptions, double, threshold) = 20.0;  ///< x itself where beta * x > threshold
};
/// GLU's setting: the dim it halves.
struct GLUOptions {
  ANVIL_OPTION(GLUOptions, int64_t, dim) = -1;  ///< the dim split in halves (its size must be even)
};

/// f(x), written into x when inplace, x's autograd history rebased onto it.
/// Where x needs a gradient, f reads a copy: the backward reads f's saved
/// input, which writing x would change under it.
template <class F> Tensor apply_in_place_if(bool inplace, const Tensor& x, F f) {
  if (!inplace) return f(x);
  Tensor result = f(x.requires_grad() ? x.clone() : x);
  Tensor self = x;
  self.copy_(result);
  return self;
}

}  // namespace anvil::nn
