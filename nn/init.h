#pragma once
/// @file
/// Parameter initialisation, as torch.nn.init. Every function fills its tensor
/// in place (under NoGradGuard, so parameters that require grad can be passed)
/// and returns it. Random values come from anvil's global generator
/// (core/random.h): after manual_seed(s) the same calls give the same values.
///
///     nn::init::kaiming_normal_(conv->weight, {.mode = nn::init::FanMode::FanOut,
///                                              .nonlinearity = nn::init::Nonlinearity::ReLU});
///     nn::init::zeros_(conv->bias);
#include <cstdint>
#include <utility>

#include "core/tensor.h"

namespace anvil::nn::init {

/// The nonlinearities calculate_gain knows, as torch.nn.init's names.
enum class Nonlinearity { Linear, Conv1d, Conv2d, Conv3d, Sigmoid, Tanh, ReLU, LeakyReLU, SELU };
/// Whether a Kaiming init keeps the forward's variance (FanIn) or the backward's (FanOut).
enum class FanMode { FanIn, FanOut };

/// The recommended gain for a nonlinearity (PyTorch's values); `param` is the
/// negative slope of LeakyReLU.
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);
/// {fan_in, fan_out} of a weight [out, in, *kernel]; needs at least 2 dims.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

Tensor uniform_(Tensor t, double low = 0.0, double high = 1.0);  ///< Values uniform in [low, high).
Tensor normal_(Tensor t, double mean = 0.0, double std = 1.0);  ///< Values normal with `mean` and `std`.
/// Values sampled from the normal restricted to [a, b]
/// (absolute bounds, as PyTorch), by the inverse-CDF method.
Tensor trunc_normal_(Tensor t, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0);
Tensor constant_(Tensor t, double value);  ///< Every element `value`.
Tensor zeros_(Tensor t);  ///< Every element 0.
Tensor ones_(Tensor t);  ///< Every element 1.

/// Glorot: uniform in +-gain*sqrt(6/(fan_in+fan_out)) / normal with std gain*sqrt(2/(fan_in+fan_out)).
Tensor xavier_uniform_(Tensor t, double gain = 1.0);
Tensor xavier_normal_(Tensor t, double gain = 1.0);  ///< Glorot normal: std gain * sqrt(2 / (fan_in + fan_out)).

/// kaiming_uniform_'s and kaiming_normal_'s settings, as torch.nn.init's arguments.
struct KaimingOptions {
  double a = 0.0;  ///< negative slope for LeakyReLU
  FanMode mode = FanMode::FanIn;  ///< FanIn or FanOut
  Nonlinearity nonlinearity = Nonlinearity::LeakyReLU;  ///< PyTorch's default
};
/// He: std = gain/sqrt(fan); uniform bound = gain*sqrt(3/fan).
Tensor kaiming_uniform_(Tensor t, const KaimingOptions& o = {});
Tensor kaiming_normal_(Tensor t, const KaimingOptions& o = {});  ///< He normal: std = gain / sqrt(fan).

}  // namespace anvil::nn::init
