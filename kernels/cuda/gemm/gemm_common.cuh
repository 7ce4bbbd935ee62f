#pragma once
// Device-side pieces every rung shares: index helpers and the epilogue that
// applies alpha and beta. Included only by the rungs' .cu files.
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/gemm/gemm.h"

namespace anvil::cuda::gemm {

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// C[i] = alpha * acc + beta * C[i]. With beta == 0 the old C is not read, so
// C may hold garbage (even NaN) on entry, as BLAS allows.
__device__ __forceinline__ void store_fp32(float* c, float acc, float alpha, float beta) {
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}

// The float32 rungs' launchers share this view of the arguments.
struct Fp32Args {
  int M, N, K;
  const float* A;
  int lda;
  const float* B;
  int ldb;
  float* C;
  int ldc;
  float alpha, beta;
};

inline Fp32Args fp32_args(const GemmArgs& a) {
  return Fp32Args{static_cast<int>(a.M),
                  static_cast<int>(a.N),
                  static_cast<int>(a.K),
                  static_cast<const float*>(a.A),
                  static_cast<int>(a.lda),
                  static_cast<const float*>(a.B),
                  static_cast<int>(a.ldb),
                  static_cast<float*>(a.C),
                  static_cast<int>(a.ldc),
                  a.alpha,
                  a.beta};
}

}  // namespace anvil::cuda::gemm
