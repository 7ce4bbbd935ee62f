#pragma once
// conv2d and its backward passes as im2col + one GEMM per group (the layout is
// in kernels/cuda/im2col.h), on the backend's own matmul: the hand-written
// path for a CUDA device without cuDNN (the emulated GPU, where matmul runs
// on the GEMM ladder). Same contracts, checks and messages as
// kernel::Conv2d*; any floating dtype the backend's matmul takes.
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/runtime.h"

namespace anvil::cuda {

class CudaRuntime;

void conv2d_im2col(CudaRuntime& backend, const View& out, const View& in, const View& weight, const View* bias,
                   const Conv2dParams& p);
void conv2d_backward_input_im2col(CudaRuntime& backend, const View& grad_in, const View& grad_out, const View& weight,
                                  const Conv2dParams& p);
void conv2d_backward_weight_im2col(CudaRuntime& backend, const View& grad_weight, const View& grad_out, const View& in,
                                   const Conv2dParams& p);

// out += bias broadcast over N, H and W (any dtype, any bias stride), in
// place: how both conv2d paths (this one and cuDNN's) add the bias.
void add_conv_bias(CudaRuntime& backend, const View& out, const View& bias);

}  // namespace anvil::cuda
