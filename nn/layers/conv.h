#pragma once
// Conv2d over [N, C, H, W] (or unbatched [C, H, W]) input.
//
//   auto conv = std::make_shared<nn::Conv2d>(nn::Conv2dOptions{.in_channels = 3, .out_channels = 16,
//                                                               .kernel_size = 3, .padding = 1});
//   auto same = std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 16, 3).padding(1));  // libtorch's spelling
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
  // weight [out, in/groups, kh, kw], bias [out]; PyTorch's default init
  // (uniform in +-1/sqrt(fan_in), fan_in = in/groups * kh * kw).
  explicit Conv2d(const Conv2dOptions& options);
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size)
      : Conv2d(Conv2dOptions{.in_channels = in_channels, .out_channels = out_channels, .kernel_size = kernel_size}) {}

  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();

  Conv2dOptions options;
  Tensor weight, bias;
};

}  // namespace anvil::nn
