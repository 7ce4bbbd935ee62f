#pragma once
// 2-D pooling over [N, C, H, W] (or unbatched [C, H, W]) input.
//
//   auto pool = std::make_shared<nn::MaxPool2d>(2);                       // kernel 2, stride 2
//   auto avg = std::make_shared<nn::AvgPool2d>(nn::AvgPool2dOptions{.kernel_size = 3, .stride = 1, .padding = 1});
//   auto gap = std::make_shared<nn::AdaptiveAvgPool2d>(1);                // global average pool
#include <optional>

#include "core/base/option_field.h"
#include "core/ops/nn_ops.h"
#include "nn/layers/size2.h"
#include "nn/module.h"

namespace anvil::nn {

struct MaxPool2dOptions {
  ANVIL_OPTION(MaxPool2dOptions, Size2, kernel_size) = 2;
  ANVIL_OPTION(MaxPool2dOptions, std::optional<Size2>, stride) = std::nullopt;  // default: kernel_size
  ANVIL_OPTION(MaxPool2dOptions, Size2, padding) = 0;
  ANVIL_OPTION(MaxPool2dOptions, bool, ceil_mode) = false;  // round the output size up (PyTorch's rule)
};

struct AvgPool2dOptions {
  ANVIL_OPTION(AvgPool2dOptions, Size2, kernel_size) = 2;
  ANVIL_OPTION(AvgPool2dOptions, std::optional<Size2>, stride) = std::nullopt;  // default: kernel_size
  ANVIL_OPTION(AvgPool2dOptions, Size2, padding) = 0;
  ANVIL_OPTION(AvgPool2dOptions, bool, count_include_pad) = true;  // whether padded zeros count in the average
  ANVIL_OPTION(AvgPool2dOptions, bool, ceil_mode) = false;  // round the output size up (PyTorch's rule)
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Size2 kernel_size) : MaxPool2d(MaxPool2dOptions{.kernel_size = kernel_size}) {}
  explicit MaxPool2d(const MaxPool2dOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  MaxPool2dOptions options;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Size2 kernel_size) : AvgPool2d(AvgPool2dOptions{.kernel_size = kernel_size}) {}
  explicit AvgPool2d(const AvgPool2dOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  AvgPool2dOptions options;
};

// Averages into a fixed output size whatever the input size, with PyTorch's
// windows: output cell i covers [floor(i*H/oh), ceil((i+1)*H/oh)).
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Size2 output_size) : Module("AdaptiveAvgPool2d"), output_size(output_size) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override { return "output_size=" + output_size.str(); }

  Size2 output_size;
};

}  // namespace anvil::nn
