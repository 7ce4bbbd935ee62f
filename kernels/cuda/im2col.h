#pragma once
// im2col and its adjoint for the hand-written convolution (the path used where
// cuDNN is absent, as on the emulated GPU: kernels/cuda/emulator/convolution.cpp).
//
// The column matrix of one group of a batch is [K, N * Ho * Wo], row-major,
// K = Cin/groups * kH * kW; row (ci, ki, kj), column (n, oh, ow) holds
// x[n, group * Cin/groups + ci, oh*sh - ph + ki*dh, ow*sw - pw + kj*dw], zero
// in the padding. With it one GEMM per group does a whole batch:
//   forward          y_g  [Cout/g, N*HoWo] = W_g [Cout/g, K] @ cols
//   backward weight  dW_g [Cout/g, K]      = dy_g @ cols^T
//   backward input   dcols [K, N*HoWo]     = W_g^T @ dy_g, then col2im
// Buffers are dense (x, dx: [N, C, H, W]) on the current device; work queues
// on `stream`. Any floating dtype; col2im sums in the dtype's accumulate type.
#include <cuda_runtime_api.h>

#include "core/base/dtype.h"
#include "kernels/shapes/geometry.h"

namespace anvil::cuda {

void im2col(DType dtype, void* cols, const void* x, const shapes::ConvGeometry& g, int64_t group, cudaStream_t stream);

// dx[:, group's channels] = the sum, for each input element, of the column
// entries that read it (a gather: deterministic, no atomics). Writes every
// element of the group's channels, so dx needs no zeroing.
void col2im(DType dtype, void* dx, const void* cols, const shapes::ConvGeometry& g, int64_t group, cudaStream_t stream);

}  // namespace anvil::cuda
