#pragma once
// Hand-written LU factorization and solve (lu_kernels.cu) for a device
// without cuSOLVER: the emulated GPU (kernels/cuda/emulator/lu_paths.cu).
// Same contract and layout as kernel::LuFactor / lu_solve: dense batches of
// column-major matrices, LAPACK's 1-based pivots, info = first zero pivot.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/base/dtype.h"
#include "kernels/ops/linalg_kernels.h"

namespace anvil::cuda {

// a [batch, n, n] factored in place; pivots [batch, n], info [batch] int32.
void lu_factor_dense(DType dtype, void* a, int* pivots, int* info, int64_t batch, int64_t n, cudaStream_t stream);
// b [batch, n, rhs] (each matrix column-major) overwritten with the solution.
void lu_solve_dense(DType dtype, const void* lu, const int* pivots, void* b, int64_t batch, int64_t n, int64_t rhs,
                    cudaStream_t stream);

}  // namespace anvil::cuda
