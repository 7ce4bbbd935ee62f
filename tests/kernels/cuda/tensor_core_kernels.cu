// Kernels for test_tensor_core.cpp (see tensor_core_kernels.h).
#include "tests/kernels/cuda/tensor_core_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/device/tensor_core.cuh"
#include "kernels/cuda/launch/launch.cuh"

namespace anvil::cuda::test {
namespace {

__device__ __forceinline__ uint32_t pack(uint16_t low, uint16_t high) { return low | uint32_t{high} << 16; }

// Fragments by the PTX ISA's m16n8k16 layouts (tensor_core.cuh): g = lane / 4, q = lane % 4.
template <typename T> __global__ void mma_tile(const uint16_t* A, const uint16_t* B, const float* C, float* D) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  const int lane = static_cast<int>(threadIdx.x), g = lane / 4, q = lane % 4;
  auto a_at = [&](int row, int k) { return pack(A[row * 16 + k], A[row * 16 + k + 1]); };
  auto b_at = [&](int k, int col) { return pack(B[k * 8 + col], B[(k + 1) * 8 + col]); };
  const uint32_t a[4] = {a_at(g, 2 * q), a_at(g + 8, 2 * q), a_at(g, 2 * q + 8), a_at(g + 8, 2 * q + 8)};
  const uint32_t b[2] = {b_at(2 * q, g), b_at(2 * q + 8, g)};
  float d[4] = {C[g * 8 + 2 * q], C[g * 8 + 2 * q + 1], C[(g + 8) * 8 + 2 * q], C[(g + 8) * 8 + 2 * q + 1]};
  dev::mma_m16n8k16<T>(d, a, b);
  D[g * 8 + 2 * q] = d[0];
  D[g * 8 + 2 * q + 1] = d[1];
  D[(g + 8) * 8 + 2 * q] = d[2];
  D[(g + 8) * 8 + 2 * q + 1] = d[3];
#endif
}

template <int kMatrices, bool kTrans>
__global__ void ldmatrix_rows(const uint16_t* rows, const int* row_of_lane, uint32_t* out) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  __shared__ __align__(16) uint16_t tile[32][8];
  const int lane = static_cast<int>(threadIdx.x);
  for (int c = 0; c < 8; ++c) tile[lane][c] = rows[lane * 8 + c];
  __syncthreads();
  uint32_t r[kMatrices];
  const void* row = &tile[row_of_lane[lane]][0];
  if constexpr (kMatrices == 4) {
    if constexpr (kTrans)
      dev::ldmatrix_x4_trans(r, row);
    else
      dev::ldmatrix_x4(r, row);
  } else {
    if constexpr (kTrans)
      dev::ldmatrix_x2_trans(r, row);
    else
      dev::ldmatrix_x2(r, row);
  }
  for (int i = 0; i < kMatrices; ++i) out[lane * kMatrices + i] = r[i];
#endif
}

}  // namespace

void launch_mma_tile(bool bf16, const uint16_t* a, const uint16_t* b, const float* c, float* d, cudaStream_t s) {
  if (bf16)
    launch_kernel(mma_tile<__nv_bfloat16>, 1, 32, 0, s)(a, b, c, d);
  else
    launch_kernel(mma_tile<__half>, 1, 32, 0, s)(a, b, c, d);
  ANVIL_CUDA_CHECK_LAUNCH("mma_tile");
}

void launch_ldmatrix(int matrices, bool trans, const uint16_t* rows, const int* row_of_lane, uint32_t* out,
                     cudaStream_t s) {
  if (matrices == 4 && trans)
    launch_kernel(ldmatrix_rows<4, true>, 1, 32, 0, s)(rows, row_of_lane, out);
  else if (matrices == 4)
    launch_kernel(ldmatrix_rows<4, false>, 1, 32, 0, s)(rows, row_of_lane, out);
  else if (trans)
    launch_kernel(ldmatrix_rows<2, true>, 1, 32, 0, s)(rows, row_of_lane, out);
  else
    launch_kernel(ldmatrix_rows<2, false>, 1, 32, 0, s)(rows, row_of_lane, out);
  ANVIL_CUDA_CHECK_LAUNCH("ldmatrix_rows");
}

}  // namespace anvil::cuda::test
