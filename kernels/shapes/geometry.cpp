#include "kernels/shapes/geometry.h"

#include "core/base/error.h"
#include "kernels/ops/conv_pool_kernels.h"

namespace anvil::shapes {

PoolGeometry pool_geometry(const char* op, const Shape& in, const Shape& out, const Pool2dParams& p) {
  ANVIL_CHECK(in.size() >= 3 && in.size() == out.size(), op,
              ": expected input [N, C, H, W] (or [C, H, W]) and an output of the same rank, got input ", in,
              ", output ", out);
  const size_t d = in.size();
  PoolGeometry g{1,           in[d - 2],   in[d - 1],   out[d - 2],   out[d - 1],   p.kernel[0],
                 p.kernel[1], p.stride[0], p.stride[1], p.padding[0], p.padding[1], p.count_include_pad};
  for (size_t i = 0; i + 2 < d; ++i) {
    ANVIL_CHECK(in[i] == out[i], op, ": input ", in, " and output ", out, " differ in dim ", i);
    g.planes *= in[i];
  }
  ANVIL_CHECK(g.kh > 0 && g.kw > 0 && g.sh > 0 && g.sw > 0, op, ": kernel and stride must be positive, got kernel [",
              g.kh, ", ", g.kw, "], stride [", g.sh, ", ", g.sw, "]");
  ANVIL_CHECK(g.ph >= 0 && g.pw >= 0 && 2 * g.ph <= g.kh && 2 * g.pw <= g.kw, op,
              ": padding must be between 0 and half the kernel size, got padding [", g.ph, ", ", g.pw, "] for kernel [",
              g.kh, ", ", g.kw, "]");
  // With H or W zero and padding, a window could hold nothing but padding and
  // the kernels would read an input plane that has no elements. PyTorch
  // rejects a zero height or width; so do we, on both backends.
  ANVIL_CHECK(g.planes == 0 || (g.h > 0 && g.w > 0) || g.ho == 0 || g.wo == 0, op, ": input ", in,
              " has a zero height or width but the output ", out,
              " is not empty: its windows would hold only padding (pool a non-empty plane)");
  // Floor and ceil mode both give sizes whose last window starts inside the padded input.
  ANVIL_CHECK(g.ho >= 0 && g.wo >= 0 && (g.ho == 0 || (g.ho - 1) * g.sh < g.h + g.ph) &&
                  (g.wo == 0 || (g.wo - 1) * g.sw < g.w + g.pw),
              op, ": output ", out, " is too large for input ", in, " with kernel [", g.kh, ", ", g.kw, "], stride [",
              g.sh, ", ", g.sw, "], padding [", g.ph, ", ", g.pw, "]");
  return g;
}

int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d) {
  return (in + 2 * pad - d * (k - 1) - 1) / s + 1;
}

ConvGeometry conv_geometry(const char* op, const Shape& in, const Shape& weight, const Shape& out,
                           const Conv2dParams& p) {
  ANVIL_CHECK(in.size() == 4 && weight.size() == 4 && out.size() == 4, op,
              ": expected 4-D input [N, C, H, W], weight [Cout, Cin/groups, kH, kW] and output [N, Cout, Ho, Wo], "
              "got input ",
              in, ", weight ", weight, ", output ", out);
  ConvGeometry g{in[0],        in[1],         in[2],         in[3],       out[1],      out[2],
                 out[3],       weight[2],     weight[3],     p.stride[0], p.stride[1], p.padding[0],
                 p.padding[1], p.dilation[0], p.dilation[1], p.groups};
  ANVIL_CHECK(g.sh > 0 && g.sw > 0 && g.dh > 0 && g.dw > 0 && g.ph >= 0 && g.pw >= 0 && g.groups > 0, op,
              ": stride and dilation must be positive and padding non-negative, got stride [", g.sh, ", ", g.sw,
              "], padding [", g.ph, ", ", g.pw, "], dilation [", g.dh, ", ", g.dw, "], groups ", g.groups);
  ANVIL_CHECK(g.c % g.groups == 0 && g.cout % g.groups == 0 && weight[0] == g.cout && weight[1] * g.groups == g.c &&
                  out[0] == g.n,
              op, ": input ", in, ", weight ", weight, " and output ", out, " do not agree for groups=", g.groups,
              " (expected weight [Cout, Cin/groups, kH, kW] and output [N, Cout, Ho, Wo])");
  const int64_t ho = conv_out_size(g.h, g.kh, g.sh, g.ph, g.dh), wo = conv_out_size(g.w, g.kw, g.sw, g.pw, g.dw);
  ANVIL_CHECK(ho == g.ho && wo == g.wo && ho > 0 && wo > 0, op, ": input ", in, " with kernel [", g.kh, ", ", g.kw,
              "], stride [", g.sh, ", ", g.sw, "], padding [", g.ph, ", ", g.pw, "], dilation [", g.dh, ", ", g.dw,
              "] gives output spatial size [", ho, ", ", wo, "], but the output is ", out);
  return g;
}

ConvGeometry conv_geometry(const Shape& in, const Shape& weight, const Shape& out, const View* bias,
                           const Conv2dParams& p) {
  const ConvGeometry g = conv_geometry("conv2d", in, weight, out, p);
  ANVIL_CHECK(!bias || (bias->dim() == 1 && bias->shape[0] == g.cout), "conv2d: bias must have shape [", g.cout,
              "], got ", bias ? bias->shape : Shape{});
  return g;
}

}  // namespace anvil::shapes
