#pragma once
// The GEMM ladder as the CUDA backend's matmul (opt-in): kernels/cublas/
// matmul.cpp calls ladder_matmul() first when matmul_use_gemm_ladder() is on
// (kernels/matmul_settings.h, or ANVIL_GEMM_LADDER=1), and runs cuBLASLt
// whenever it returns false. The emulated GPU's matmul (no cuBLAS there:
// kernels/cuda/emulator/library_paths.cu) calls it on float32 operands always.
#include <cuda_runtime_api.h>

#include "kernels/ops/linalg_kernels.h"

namespace anvil::cuda::gemm {

// out = alpha * a @ b + beta * out for 2-D [M,K]@[K,N] or batched 3-D
// [B,M,K]@[B,K,N] views, on `stream` (the caller holds the device guard),
// with the fastest rung that takes the arguments (best_rung): 09 on Hopper
// and 08 elsewhere for bfloat16/float16, 07 or 05 for float32. Returns false
// and does nothing when no rung handles them: another dtype, a matrix whose
// last dimension is not contiguous (transposed views), leading dimensions or
// pointers the rungs cannot take, or sizes past 32-bit indexing.
bool ladder_matmul(const View& out, const View& a, const View& b, const MatmulParams& p, cudaStream_t stream);

}  // namespace anvil::cuda::gemm
