#pragma once
// Hand-written SVD (svd_kernels.cu) for a device without cuSOLVER: the
// emulated GPU (kernels/cuda/emulator/svd_paths.cu). Same contract and layout
// as kernel::Svd: a [batch, m, n] column-major (destroyed), s [batch, k]
// descending, u [batch, m, k] and v [batch, n, k] column-major or both null,
// info [batch] 0 or k + 1 where the sweeps did not converge (as gesvdj).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/base/dtype.h"
#include "kernels/ops/linalg_kernels.h"

namespace anvil::cuda {

void svd_jacobi(DType dtype, void* a, void* s, void* u, void* v, int* info, int64_t batch, int64_t m, int64_t n,
                cudaStream_t stream);

}  // namespace anvil::cuda
