#include "nn/layers/conv.h"

#include <cmath>

#include "core/factory.h"
#include "core/ops/nn_ops.h"
#include "nn/init.h"

namespace anvil::nn {

Conv2d::Conv2d(const Conv2dOptions& o) : Module("Conv2d"), options(o) {
  ANVIL_CHECK(o.in_channels > 0 && o.out_channels > 0 && o.groups > 0, "Conv2d: expected positive in_channels, ",
              "out_channels and groups, got ", o.in_channels, ", ", o.out_channels, ", ", o.groups);
  ANVIL_CHECK(o.in_channels % o.groups == 0 && o.out_channels % o.groups == 0, "Conv2d: in_channels (", o.in_channels,
              ") and out_channels (", o.out_channels, ") must both be divisible by groups (", o.groups, ")");
  ANVIL_CHECK(o.kernel_size.h > 0 && o.kernel_size.w > 0 && o.stride.h > 0 && o.stride.w > 0 && o.dilation.h > 0 &&
                  o.dilation.w > 0 && o.padding.h >= 0 && o.padding.w >= 0,
              "Conv2d: expected positive kernel_size, stride and dilation and non-negative padding, got kernel_size ",
              o.kernel_size.str(), ", stride ", o.stride.str(), ", dilation ", o.dilation.str(), ", padding ",
              o.padding.str());
  weight =
      register_parameter("weight", empty({o.out_channels, o.in_channels / o.groups, o.kernel_size.h, o.kernel_size.w}));
  if (o.bias) bias = register_parameter("bias", empty({o.out_channels}));
  reset_parameters();
}

void Conv2d::reset_parameters() {
  init::kaiming_uniform_(weight, {.a = std::sqrt(5.0)});
  if (bias.defined()) {
    const auto fan_in = static_cast<double>(init::calculate_fan_in_and_fan_out(weight).first);
    init::uniform_(bias, -1.0 / std::sqrt(fan_in), 1.0 / std::sqrt(fan_in));
  }
}

Tensor Conv2d::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined() && (x.dim() == 3 || x.dim() == 4) && x.size(-3) == options.in_channels,
              "Conv2d: expected input [N, ", options.in_channels, ", H, W] or [", options.in_channels, ", H, W], got ",
              x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  anvil::Conv2dOptions o;
  o.stride = options.stride.array();
  o.padding = options.padding.array();
  o.dilation = options.dilation.array();
  o.groups = options.groups;
  if (x.dim() == 3) return conv2d(x.unsqueeze(0), weight, bias, o).squeeze(0);
  return conv2d(x, weight, bias, o);
}

std::string Conv2d::extra_repr() const {
  std::string s = std::to_string(options.in_channels) + ", " + std::to_string(options.out_channels) +
                  ", kernel_size=" + options.kernel_size.str() + ", stride=" + options.stride.str();
  if (options.padding != Size2(0)) s += ", padding=" + options.padding.str();
  if (options.dilation != Size2(1)) s += ", dilation=" + options.dilation.str();
  if (options.groups != 1) s += ", groups=" + std::to_string(options.groups);
  if (!options.bias) s += ", bias=False";
  return s;
}

}  // namespace anvil::nn
