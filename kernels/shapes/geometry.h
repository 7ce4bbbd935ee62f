#pragma once
// Pooling and convolution geometry, checked the same way (and with the same
// messages) for every backend: the CPU kernels and the CUDA/cuDNN ones call
// these, so a bad call fails identically wherever it runs. Plain C++ (no
// CUDA headers); PoolGeometry is also passed by value to CUDA kernels.
#include <cstdint>

#include "core/base/host_device.h"
#include "kernels/ops/conv_pool_kernels.h"

namespace anvil::shapes {

// Pooling over `planes` dense [h, w] planes into [ho, wo] planes. Windows
// are clipped at the input; count_include_pad counts only padding inside
// [-p, size + p) (see kernels/cpu/pool.cpp).
struct PoolGeometry {
  int64_t planes, h, w, ho, wo;
  int64_t kh, kw, sh, sw, ph, pw;
  bool count_include_pad;
};

// in/out are [N, C, H, W] (or [C, H, W]); `op` names the entry point in errors.
PoolGeometry pool_geometry(const char* op, const Shape& in, const Shape& out, const Pool2dParams& p);

struct ConvGeometry {
  int64_t n, c, h, w;  // input
  int64_t cout, ho, wo;  // output
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, groups;

  // Also called in CUDA kernels (kernels/cuda/im2col.cu): ANVIL_HD.
  ANVIL_HD int64_t cin_per_group() const { return c / groups; }
  ANVIL_HD int64_t cout_per_group() const { return cout / groups; }
  ANVIL_HD int64_t col_rows() const { return cin_per_group() * kh * kw; }
  ANVIL_HD int64_t col_cols() const { return ho * wo; }
  ANVIL_HD int64_t weight_group_elems() const { return cout_per_group() * col_rows(); }
};

// The output size of one spatial dim.
int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d);

// Shapes of the input, weight and output sides of one conv call, checked
// against each other. `op` names the entry point for the error message.
ConvGeometry conv_geometry(const char* op, const Shape& in, const Shape& weight, const Shape& out,
                           const Conv2dParams& p);
// conv2d's geometry with its optional bias, which must be [Cout].
ConvGeometry conv_geometry(const Shape& in, const Shape& weight, const Shape& out, const View* bias,
                           const Conv2dParams& p);

}  // namespace anvil::shapes
