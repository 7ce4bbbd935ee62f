#pragma once
/// @file
/// Pooling layers: MaxPool2d, AvgPool2d and AdaptiveAvgPool2d over
/// [N, C, H, W] (or unbatched [C, H, W]) input; MaxPool1d and AvgPool1d over
/// [N, C, L] (or [C, L]) and AdaptiveMaxPool2d, one-liners over the functional
/// forms whose options they take (nn/functional.h).
///
///     auto pool = std::make_shared<nn::MaxPool2d>(2);                       // kernel 2, stride 2
///     auto avg = std::make_shared<nn::AvgPool2d>(nn::AvgPool2dOptions{.kernel_size = 3, .stride = 1, .padding = 1});
///     auto gap = std::make_shared<nn::AdaptiveAvgPool2d>(1);                // global average pool
///     auto pool1 = std::make_shared<nn::MaxPool1d>(nn::MaxPool1dOptions(3).stride(2).ceil_mode(true));
///     auto amp = std::make_shared<nn::AdaptiveMaxPool2d>(nn::AdaptiveMaxPool2dOptions(7));
#include <optional>

#include "core/base/option_field.h"
#include "core/ops/nn_ops.h"
#include "nn/functional.h"
#include "nn/layers/size2.h"
#include "nn/module.h"

namespace anvil::nn {

/// MaxPool2d's settings, as libtorch's nn::MaxPool2dOptions.
struct MaxPool2dOptions {
  ANVIL_OPTION(MaxPool2dOptions, Size2, kernel_size) = 2;  ///< the window's (height, width)
  ANVIL_OPTION(MaxPool2dOptions, std::optional<Size2>, stride) = std::nullopt;  ///< default: kernel_size
  ANVIL_OPTION(MaxPool2dOptions, Size2, padding) = 0;  ///< implicit -inf padding on each side
  ANVIL_OPTION(MaxPool2dOptions, bool, ceil_mode) = false;  ///< round the output size up (PyTorch's rule)
};

/// AvgPool2d's settings, as libtorch's nn::AvgPool2dOptions.
struct AvgPool2dOptions {
  ANVIL_OPTION(AvgPool2dOptions, Size2, kernel_size) = 2;  ///< the window's (height, width)
  ANVIL_OPTION(AvgPool2dOptions, std::optional<Size2>, stride) = std::nullopt;  ///< default: kernel_size
  ANVIL_OPTION(AvgPool2dOptions, Size2, padding) = 0;  ///< implicit zero padding on each side
  ANVIL_OPTION(AvgPool2dOptions, bool, count_include_pad) = true;  ///< whether padded zeros count in the average
  ANVIL_OPTION(AvgPool2dOptions, bool, ceil_mode) = false;  ///< round the output size up (PyTorch's rule)
};

/// The largest value of each window, as torch.nn.MaxPool2d.
class MaxPool2d : public Module {
 public:
  /// Windows of `kernel_size`, stride the same.
  explicit MaxPool2d(Size2 kernel_size) : MaxPool2d(MaxPool2dOptions{.kernel_size = kernel_size}) {}
  explicit MaxPool2d(const MaxPool2dOptions& options);  ///< Windows as `options` say.
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  MaxPool2dOptions options;  ///< the settings it was built with
};

/// The mean of each window, as torch.nn.AvgPool2d.
class AvgPool2d : public Module {
 public:
  /// Windows of `kernel_size`, stride the same.
  explicit AvgPool2d(Size2 kernel_size) : AvgPool2d(AvgPool2dOptions{.kernel_size = kernel_size}) {}
  explicit AvgPool2d(const AvgPool2dOptions& options);  ///< Windows as `options` say.
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  AvgPool2dOptions options;  ///< the settings it was built with
};

/// Averages into a fixed output size whatever the input size, with PyTorch's
/// windows: output cell i covers [floor(i*H/oh), ceil((i+1)*H/oh)).
class AdaptiveAvgPool2d : public Module {
 public:
  /// Pools into `size` (height, width) cells.
  explicit AdaptiveAvgPool2d(Size2 size) : Module("AdaptiveAvgPool2d"), output_size(size) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override { return "output_size=" + output_size.str(); }

  Size2 output_size;  ///< the output's (height, width)
};

using MaxPool1dOptions = functional::MaxPool1dFuncOptions;  ///< libtorch's name for MaxPool1d's settings.
using AvgPool1dOptions = functional::AvgPool1dFuncOptions;  ///< libtorch's name for AvgPool1d's settings.
/// libtorch's name for AdaptiveMaxPool2d's settings.
using AdaptiveMaxPool2dOptions = functional::AdaptiveMaxPool2dFuncOptions;

/// The largest value of each window over [N, C, L] (or [C, L]), as torch.nn.MaxPool1d.
class MaxPool1d : public Module {
 public:
  /// Windows as `o` says.
  explicit MaxPool1d(const MaxPool1dOptions& o) : Module("MaxPool1d"), options(o) {}
  /// Windows of `kernel_size`, stride the same.
  explicit MaxPool1d(int64_t kernel_size) : MaxPool1d(MaxPool1dOptions{.kernel_size = kernel_size}) {}
  Tensor forward(const Tensor& x) override { return functional::max_pool1d(x, options); }
  MaxPool1dOptions options;  ///< the settings it was built with
};

/// The mean of each window over [N, C, L] (or [C, L]), as torch.nn.AvgPool1d.
class AvgPool1d : public Module {
 public:
  /// Windows as `o` says.
  explicit AvgPool1d(const AvgPool1dOptions& o) : Module("AvgPool1d"), options(o) {}
  /// Windows of `kernel_size`, stride the same.
  explicit AvgPool1d(int64_t kernel_size) : AvgPool1d(AvgPool1dOptions{.kernel_size = kernel_size}) {}
  Tensor forward(const Tensor& x) override { return functional::avg_pool1d(x, options); }
  AvgPool1dOptions options;  ///< the settings it was built with
};

/// The largest value of each of a fixed grid of cells, whatever the input size, as torch.nn.AdaptiveMaxPool2d.
class AdaptiveMaxPool2d : public Module {
 public:
  /// Cells as `o` says.
  explicit AdaptiveMaxPool2d(const AdaptiveMaxPool2dOptions& o) : Module("AdaptiveMaxPool2d"), options(o) {}
  /// Pools into `output_size` (height, width) cells.
  explicit AdaptiveMaxPool2d(Size2 output_size)
      : AdaptiveMaxPool2d(AdaptiveMaxPool2dOptions{.output_size = output_size}) {}
  Tensor forward(const Tensor& x) override { return functional::adaptive_max_pool2d(x, options); }
  std::string extra_repr() const override { return "output_size=" + options.output_size.str(); }
  AdaptiveMaxPool2dOptions options;  ///< the settings it was built with
};

}  // namespace anvil::nn
