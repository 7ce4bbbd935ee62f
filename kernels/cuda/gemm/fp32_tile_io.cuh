#pragma once
// float4 tile loads for the vectorized float32 rungs (06, 07). A full,
// aligned float4 is one 16-byte load (LDG.128); a float4 that crosses the
// matrix edge falls back to predicated scalar loads with zero fill, so edge
// tiles cost a little more but stay correct for any size.
#include "kernels/cuda/gemm/gemm_common.cuh"

namespace anvil::cuda::gemm {

// Elements (row, col..col+3) of a row-major rows x cols matrix with leading
// dimension ld. Requires ld % 4 == 0, col % 4 == 0 and a 16-byte aligned base
// (checked on the host) so the full case is an aligned vector load.
__device__ __forceinline__ float4 load_float4_or_zero(const float* base, int row, int col, int rows, int cols, int ld) {
  if (row >= rows) return make_float4(0.f, 0.f, 0.f, 0.f);
  const float* p = base + row * ld + col;
  if (col + 3 < cols) return *reinterpret_cast<const float4*>(p);
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (col + 0 < cols) v.x = p[0];
  if (col + 1 < cols) v.y = p[1];
  if (col + 2 < cols) v.z = p[2];
  return v;  // col + 3 >= cols here
}

}  // namespace anvil::cuda::gemm
