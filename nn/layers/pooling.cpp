#include "nn/layers/pooling.h"

#include "nn/functional.h"

namespace anvil::nn {

namespace {

void check_pool_input(const char* name, const Tensor& x) {
  ANVIL_CHECK(x.defined() && (x.dim() == 3 || x.dim() == 4), name, ": expected input [N, C, H, W] or [C, H, W], got ",
              x.defined() ? x.shape_str() : std::string("an undefined tensor"));
}

void check_window(const char* name, Size2 kernel, Size2 stride, Size2 padding) {
  ANVIL_CHECK(kernel.h > 0 && kernel.w > 0 && stride.h > 0 && stride.w > 0 && padding.h >= 0 && padding.w >= 0, name,
              ": expected positive kernel_size and stride and non-negative padding, got kernel_size ", kernel.str(),
              ", stride ", stride.str(), ", padding ", padding.str());
  ANVIL_CHECK(2 * padding.h <= kernel.h && 2 * padding.w <= kernel.w, name,
              ": padding should be at most half of kernel_size, got padding ", padding.str(), " and kernel_size ",
              kernel.str());
}

Pool2dOptions core_options(Size2 kernel, Size2 stride, Size2 padding) {
  Pool2dOptions o;
  o.kernel = kernel.array();
  o.stride = stride.array();
  o.padding = padding.array();
  return o;
}

// The pooling ops take a batch; an unbatched [C, H, W] input gets one.
template <typename Fn> Tensor batched(const Tensor& x, Fn&& fn) {
  return x.dim() == 3 ? fn(x.unsqueeze(0)).squeeze(0) : fn(x);
}

}  // namespace

MaxPool2d::MaxPool2d(const MaxPool2dOptions& o) : Module("MaxPool2d"), options(o) {
  if (!options.stride) options.stride = options.kernel_size;
  check_window("MaxPool2d", options.kernel_size, *options.stride, options.padding);
}

Tensor MaxPool2d::forward(const Tensor& x) {
  check_pool_input("MaxPool2d", x);
  Pool2dOptions o = core_options(options.kernel_size, *options.stride, options.padding);
  o.ceil_mode = options.ceil_mode;
  return batched(x, [&](const Tensor& b) { return max_pool2d(b, o); });
}

std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + options.kernel_size.str() + ", stride=" + options.stride->str() +
         ", padding=" + options.padding.str();
}

AvgPool2d::AvgPool2d(const AvgPool2dOptions& o) : Module("AvgPool2d"), options(o) {
  if (!options.stride) options.stride = options.kernel_size;
  check_window("AvgPool2d", options.kernel_size, *options.stride, options.padding);
}

Tensor AvgPool2d::forward(const Tensor& x) {
  check_pool_input("AvgPool2d", x);
  Pool2dOptions o = core_options(options.kernel_size, *options.stride, options.padding);
  o.count_include_pad = options.count_include_pad;
  o.ceil_mode = options.ceil_mode;
  return batched(x, [&](const Tensor& b) { return avg_pool2d(b, o); });
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + options.kernel_size.str() + ", stride=" + options.stride->str() +
         ", padding=" + options.padding.str();
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) { return functional::adaptive_avg_pool2d(x, output_size); }

}  // namespace anvil::nn
