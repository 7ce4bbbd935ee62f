#pragma once
// 2-d convolution and pooling over NCHW (weight [Cout, Cin/groups, kH, kW]).
#include <cstdint>

#include "kernels/view.h"

namespace anvil {

struct Conv2dParams {
  int64_t stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1};
  int64_t groups = 1;
};

enum class PoolKind : uint8_t { Max, Avg };
struct Pool2dParams {
  int64_t kernel[2] = {2, 2}, stride[2] = {2, 2}, padding[2] = {0, 0};
  bool count_include_pad = true;  // Avg only
};

namespace kernel {

struct Conv2d {
  static constexpr const char* name = "conv2d";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& in, const View& weight, const View* bias, const Conv2dParams& p);
};

struct Conv2dBackwardInput {
  static constexpr const char* name = "conv2d_backward_input";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& grad_in, const View& grad_out, const View& weight, const Conv2dParams& p);
};

struct Conv2dBackwardWeight {
  static constexpr const char* name = "conv2d_backward_weight";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& grad_weight, const View& grad_out, const View& in, const Conv2dParams& p);
};

struct Pool2d {
  static constexpr const char* name = "pool2d";
  static constexpr bool has_fallback = false;
  using Signature = void(PoolKind kind, const View& out, const View& in, const Pool2dParams& p);
};

struct Pool2dBackward {
  static constexpr const char* name = "pool2d_backward";
  static constexpr bool has_fallback = false;
  using Signature = void(PoolKind kind, const View& grad_in, const View& grad_out, const View& in, const View& out,
                         const Pool2dParams& p);
};

}  // namespace kernel
}  // namespace anvil
