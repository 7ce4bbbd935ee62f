#include "nn/layers/conv.h"

#include <cmath>

#include "core/factory.h"
#include "core/ops/nn_functional.h"
#include "core/ops/nn_ops.h"
#include "nn/init.h"

namespace anvil::nn {

namespace {

void check_channels(const char* layer, int64_t in, int64_t out, int64_t groups) {
  ANVIL_CHECK(in > 0 && out > 0 && groups > 0 && in % groups == 0 && out % groups == 0, layer,
              ": expected positive in_channels and out_channels divisible by a positive groups, got ", in, ", ", out,
              " and groups ", groups);
}

// PyTorch's default for convolutions: kaiming_uniform(a = sqrt(5)) on the
// weight, the bias uniform in +-1/sqrt(fan_in).
void default_init(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, {.a = std::sqrt(5.0)});
  if (bias.defined()) {
    const auto fan_in = static_cast<double>(init::calculate_fan_in_and_fan_out(weight).first);
    init::uniform_(bias, -1.0 / std::sqrt(fan_in), 1.0 / std::sqrt(fan_in));
  }
}

}  // namespace

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

void Conv2d::reset_parameters() { default_init(weight, bias); }

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

Conv1d::Conv1d(const Conv1dOptions& o) : Module("Conv1d"), options(o) {
  check_channels("Conv1d", o.in_channels, o.out_channels, o.groups);
  ANVIL_CHECK(o.kernel_size > 0, "Conv1d: expected a positive kernel_size, got ", static_cast<int64_t>(o.kernel_size));
  weight = register_parameter("weight", empty({o.out_channels, o.in_channels / o.groups, o.kernel_size}));
  if (o.bias) bias = register_parameter("bias", empty({o.out_channels}));
  reset_parameters();
}

void Conv1d::reset_parameters() { default_init(weight, bias); }

Tensor Conv1d::forward(const Tensor& x) {
  return conv1d(x, weight, bias, {options.stride, options.padding, options.dilation, options.groups});
}

std::string Conv1d::extra_repr() const {
  return std::to_string(options.in_channels) + ", " + std::to_string(options.out_channels) +
         ", kernel_size=" + std::to_string(options.kernel_size) + ", stride=" + std::to_string(options.stride) +
         (options.padding != 0 ? ", padding=" + std::to_string(options.padding) : std::string()) +
         (options.bias ? std::string() : std::string(", bias=False"));
}

ConvTranspose2d::ConvTranspose2d(const ConvTranspose2dOptions& o) : Module("ConvTranspose2d"), options(o) {
  check_channels("ConvTranspose2d", o.in_channels, o.out_channels, o.groups);
  ANVIL_CHECK(o.kernel_size.h > 0 && o.kernel_size.w > 0, "ConvTranspose2d: expected a positive kernel_size, got ",
              o.kernel_size.str());
  weight =
      register_parameter("weight", empty({o.in_channels, o.out_channels / o.groups, o.kernel_size.h, o.kernel_size.w}));
  if (o.bias) bias = register_parameter("bias", empty({o.out_channels}));
  reset_parameters();
}

void ConvTranspose2d::reset_parameters() { default_init(weight, bias); }

Tensor ConvTranspose2d::forward(const Tensor& x) {
  anvil::ConvTranspose2dOptions c;
  c.stride = options.stride.array();
  c.padding = options.padding.array();
  c.output_padding = options.output_padding.array();
  c.dilation = options.dilation.array();
  c.groups = options.groups;
  return conv_transpose2d(x, weight, bias, c);
}

std::string ConvTranspose2d::extra_repr() const {
  return std::to_string(options.in_channels) + ", " + std::to_string(options.out_channels) +
         ", kernel_size=" + options.kernel_size.str() + ", stride=" + options.stride.str() +
         (options.padding != Size2(0) ? ", padding=" + options.padding.str() : std::string()) +
         (options.output_padding != Size2(0) ? ", output_padding=" + options.output_padding.str() : std::string());
}

}  // namespace anvil::nn
