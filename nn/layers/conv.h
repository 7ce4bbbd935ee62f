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

/// Conv2d's settings, as libtorch's nn::Conv2dOptions (also an aggregate: designated initializers).
struct Conv2dOptions {
  ANVIL_OPTION(Conv2dOptions, int64_t, in_channels) = 0;  ///< channels of the input
  ANVIL_OPTION(Conv2dOptions, int64_t, out_channels) = 0;  ///< channels of the output (the number of filters)
  ANVIL_OPTION(Conv2dOptions, Size2, kernel_size) = 1;  ///< the kernel's (height, width)
  ANVIL_OPTION(Conv2dOptions, Size2, stride) = 1;  ///< step between windows
  ANVIL_OPTION(Conv2dOptions, Size2, padding) = 0;  ///< zeros added on each side
  ANVIL_OPTION(Conv2dOptions, Size2, dilation) = 1;  ///< spacing between the kernel's taps
  ANVIL_OPTION(Conv2dOptions, int64_t, groups) = 1;  ///< channels split into this many independent groups
  ANVIL_OPTION(Conv2dOptions, bool, bias) = true;  ///< whether to add a learned bias
};

/// 2-D convolution over [N, C, H, W] (or [C, H, W]), as torch.nn.Conv2d.
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
  void reset_parameters();  ///< Re-draws weight and bias as PyTorch initialises them.

  Conv2dOptions options;  ///< the settings it was built with
  ///@{
  /// [out, in/groups, kh, kw] and [out] (bias undefined without one)
  Tensor weight, bias;
  ///@}
};

/// Conv1d's settings, as libtorch's nn::Conv1dOptions.
struct Conv1dOptions {
  ANVIL_OPTION(Conv1dOptions, int64_t, in_channels) = 0;  ///< channels of the input
  ANVIL_OPTION(Conv1dOptions, int64_t, out_channels) = 0;  ///< channels of the output (the number of filters)
  ANVIL_OPTION(Conv1dOptions, int64_t, kernel_size) = 1;  ///< the kernel's length
  ANVIL_OPTION(Conv1dOptions, int64_t, stride) = 1;  ///< step between windows
  ANVIL_OPTION(Conv1dOptions, int64_t, padding) = 0;  ///< zeros added on each side
  ANVIL_OPTION(Conv1dOptions, int64_t, dilation) = 1;  ///< spacing between the kernel's taps
  ANVIL_OPTION(Conv1dOptions, int64_t, groups) = 1;  ///< channels split into this many independent groups
  ANVIL_OPTION(Conv1dOptions, bool, bias) = true;  ///< whether to add a learned bias
};

/// 1-D convolution over [N, C, L] (or [C, L]), as torch.nn.Conv1d.
class Conv1d : public Module {
 public:
  /// weight [out, in/groups, k], bias [out]; PyTorch's default init.
  explicit Conv1d(const Conv1dOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();  ///< Re-draws weight and bias as PyTorch initialises them.

  Conv1dOptions options;  ///< the settings it was built with
  ///@{
  /// [out, in/groups, k] and [out] (bias undefined without one)
  Tensor weight, bias;
  ///@}
};

/// ConvTranspose2d's settings, as libtorch's nn::ConvTranspose2dOptions.
struct ConvTranspose2dOptions {
  ANVIL_OPTION(ConvTranspose2dOptions, int64_t, in_channels) = 0;  ///< channels of the input
  ANVIL_OPTION(ConvTranspose2dOptions, int64_t, out_channels) = 0;  ///< channels of the output
  ANVIL_OPTION(ConvTranspose2dOptions, Size2, kernel_size) = 1;  ///< the kernel's (height, width)
  ANVIL_OPTION(ConvTranspose2dOptions, Size2, stride) = 1;  ///< step between input positions in the output
  ANVIL_OPTION(ConvTranspose2dOptions, Size2, padding) = 0;  ///< removed from each side of the output
  /// extra size added to one side of the output (to pick among the sizes a stride allows)
  ANVIL_OPTION(ConvTranspose2dOptions, Size2, output_padding) = 0;
  ANVIL_OPTION(ConvTranspose2dOptions, int64_t, groups) = 1;  ///< channels split into this many independent groups
  ANVIL_OPTION(ConvTranspose2dOptions, bool, bias) = true;  ///< whether to add a learned bias
  ANVIL_OPTION(ConvTranspose2dOptions, Size2, dilation) = 1;  ///< spacing between the kernel's taps
};

/// Transposed 2-D convolution (the adjoint of Conv2d, an upsampling), as torch.nn.ConvTranspose2d.
class ConvTranspose2d : public Module {
 public:
  /// weight [in, out/groups, kh, kw], bias [out]; PyTorch's default init
  /// (its fan_in is computed from weight dim 1, out/groups * kh * kw).
  explicit ConvTranspose2d(const ConvTranspose2dOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();  ///< Re-draws weight and bias as PyTorch initialises them.

  ConvTranspose2dOptions options;  ///< the settings it was built with
  ///@{
  /// [in, out/groups, kh, kw] and [out] (bias undefined without one)
  Tensor weight, bias;
  ///@}
};

}  // namespace anvil::nn
