#pragma once
/// @file
/// Convolution layers: Conv2d over [N, C, H, W], Conv1d over [N, C, L] and
/// ConvTranspose2d over [N, C, H, W] (each also unbatched, without N), over
/// conv2d, F::conv1d and F::conv_transpose2d.
///
///     auto conv = std::make_shared<nn::Conv2d>(nn::Conv2dOptions{.in_channels = 3, .out_channels = 16,
///                                                                 .kernel_size = 3, .padding = 1});
///     auto same = std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 16, 3).padding(1));  // libtorch's spelling
///     auto conv1 = std::make_shared<nn::Conv1d>(nn::Conv1dOptions(16, 32, 3).padding(1));
///     auto up = std::make_shared<nn::ConvTranspose2d>(nn::ConvTranspose2dOptions(32, 16, 4).stride(2).padding(1));
#include <cstdint>

#include "core/base/option_field.h"
#include "nn/layers/size2.h"
#include "nn/module.h"

namespace anvil::nn {

struct Conv2dOptions {
  ANVIL_OPTION(Conv2dOptions, int64_t, in_channels) = 0;
  ANVIL_OPTION(Conv2dOptions, int64_t, out_channels) = 0;
  ANVIL_OPTION(Conv2dOptions, Size2, kernel_size) = 1;
  ANVIL_OPTION(Conv2dOptions, Size2, stride) = 1;
  ANVIL_OPTION(Conv2dOptions, Size2, padding) = 0;
  ANVIL_OPTION(Conv2dOptions, Size2, dilation) = 1;
  ANVIL_OPTION(Conv2dOptions, int64_t, groups) = 1;
  ANVIL_OPTION(Conv2dOptions, bool, bias) = true;
};

class Conv2d : public Module {
 public:
  ///@{
  /// weight [out, in/groups, kh, kw], bias [out]; PyTorch's default init
  /// (uniform in +-1/sqrt(fan_in), fan_in = in/groups * kh * kw).
  explicit Conv2d(const Conv2dOptions& options);
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : Conv2d(Conv2dOptions{.in_channels = in_channels, .out_channels = out_channels, .kernel_size = kernel_size}) {}
  ///@}

  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();

  Conv2dOptions options;
  Tensor weight, bias;
};

struct Conv1dOptions {
  ANVIL_OPTION(Conv1dOptions, int64_t, in_channels) = 0;
  ANVIL_OPTION(Conv1dOptions, int64_t, out_channels) = 0;
  ANVIL_OPTION(Conv1dOptions, int64_t, kernel_size) = 1;
  ANVIL_OPTION(Conv1dOptions, int64_t, stride) = 1;
  ANVIL_OPTION(Conv1dOptions, int64_t, padding) = 0;
  ANVIL_OPTION(Conv1dOptions, int64_t, dilation) = 1;
  ANVIL_OPTION(Conv1dOptions, int64_t, groups) = 1;
  ANVIL_OPTION(Conv1dOptions, bool, bias) = true;
};

class Conv1d : public Module {
 public:
  /// weight [out, in/groups, k], bias [out]; PyTorch's default init.
  explicit Conv1d(const Conv1dOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();

  Conv1dOptions options;
  Tensor weight, bias;
};

struct ConvTranspose2dOptions {
  ANVIL_OPTION(ConvTranspose2dOptions, int64_t, in_channels) = 0;
  ANVIL_OPTION(ConvTranspose2dOptions, int64_t, out_channels) = 0;
  ANVIL_OPTION(ConvTranspose2dOptions, Size2, kernel_size) = 1;
  ANVIL_OPTION(ConvTranspose2dOptions, Size2, stride) = 1;
  ANVIL_OPTION(ConvTranspose2dOptions, Size2, padding) = 0;
  ANVIL_OPTION(ConvTranspose2dOptions, Size2, output_padding) = 0;
  ANVIL_OPTION(ConvTranspose2dOptions, int64_t, groups) = 1;
  ANVIL_OPTION(ConvTranspose2dOptions, bool, bias) = true;
  ANVIL_OPTION(ConvTranspose2dOptions, Size2, dilation) = 1;
};

class ConvTranspose2d : public Module {
 public:
  /// weight [in, out/groups, kh, kw], bias [out]; PyTorch's default init
  /// (its fan_in is computed from weight dim 1, out/groups * kh * kw).
  explicit ConvTranspose2d(const ConvTranspose2dOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();

  ConvTranspose2dOptions options;
  Tensor weight, bias;
};

}  // namespace anvil::nn
