#pragma once
// The fused linear layer on CUDA: out = in @ weight^T + bias in one cuBLASLt
// call (the bias is added by the GEMM's epilogue). Defined in matmul.cpp.
#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

// in [rows, in_f], weight [out_f, in_f], bias [out_f] or null, out [rows, out_f].
void linear_cublaslt(CudaBackend& backend, const View& out, const View& in, const View& weight, const View* bias);

}  // namespace anvil::cuda
