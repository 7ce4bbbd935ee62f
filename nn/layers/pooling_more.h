#pragma once
// MaxPool1d and AvgPool1d over [N, C, L] (or [C, L]), AdaptiveMaxPool2d over
// [N, C, H, W] (or [C, H, W]): one-liners over the functional forms.
//
//   auto pool = std::make_shared<nn::MaxPool1d>(nn::MaxPool1dOptions(3).stride(2).ceil_mode(true));
//   auto amp = std::make_shared<nn::AdaptiveMaxPool2d>(nn::AdaptiveMaxPool2dOptions(7));
#include "nn/functional.h"
#include "nn/module.h"

namespace anvil::nn {

using MaxPool1dOptions = functional::MaxPool1dFuncOptions;
using AvgPool1dOptions = functional::AvgPool1dFuncOptions;
using AdaptiveMaxPool2dOptions = functional::AdaptiveMaxPool2dFuncOptions;

class MaxPool1d : public Module {
 public:
  explicit MaxPool1d(const MaxPool1dOptions& options) : Module("MaxPool1d"), options(options) {}
  explicit MaxPool1d(int64_t kernel_size) : MaxPool1d(MaxPool1dOptions{.kernel_size = kernel_size}) {}
  Tensor forward(const Tensor& x) override { return functional::max_pool1d(x, options); }
  MaxPool1dOptions options;
};

class AvgPool1d : public Module {
 public:
  explicit AvgPool1d(const AvgPool1dOptions& options) : Module("AvgPool1d"), options(options) {}
  explicit AvgPool1d(int64_t kernel_size) : AvgPool1d(AvgPool1dOptions{.kernel_size = kernel_size}) {}
  Tensor forward(const Tensor& x) override { return functional::avg_pool1d(x, options); }
  AvgPool1dOptions options;
};

class AdaptiveMaxPool2d : public Module {
 public:
  explicit AdaptiveMaxPool2d(const AdaptiveMaxPool2dOptions& options) : Module("AdaptiveMaxPool2d"), options(options) {}
  explicit AdaptiveMaxPool2d(Size2 output_size)
      : AdaptiveMaxPool2d(AdaptiveMaxPool2dOptions{.output_size = output_size}) {}
  Tensor forward(const Tensor& x) override { return functional::adaptive_max_pool2d(x, options); }
  std::string extra_repr() const override { return "output_size=" + options.output_size.str(); }
  AdaptiveMaxPool2dOptions options;
};

}  // namespace anvil::nn
