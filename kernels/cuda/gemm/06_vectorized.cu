// Rung 06 — vectorized: 16-byte loads everywhere, A stored transposed.
//
// What it adds over rung 05 (same 128 x 128 x 8 tiles, 8 x 8 per thread):
//   * global loads are float4 (one LDG.128 per thread per operand per tile
//     instead of four LDG.32);
//   * the A tile is stored TRANSPOSED in shared memory (As[k][m]), so a
//     thread's 8 values of A for one k are contiguous and, like B's, are read
//     with two LDS.128 instead of eight LDS.32 (rung 05 read A down a column).
//
// Why it is faster: 4x fewer load instructions for the same bytes, leaving
// more issue slots for FMAs, and no strided column reads of A. Expected
// bottleneck: shared-memory bandwidth/latency with a single buffer (loads of
// the next tile do not overlap the math), and 2-way bank conflicts on the
// reads of B and the transposing stores of A (the emulated GPU counts them).
//
// Needs: A and B 16-byte aligned, lda % 4 == 0 and ldb % 4 == 0 (checked on
// the host by launch_gemm). Any M, N, K.
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm/fp32_tile_io.cuh"
#include "kernels/cuda/launch.cuh"

namespace anvil::cuda::gemm {
namespace {

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
static_assert(BM * BK / 4 == kThreads && BK * BN / 4 == kThreads, "one float4 of A and of B per thread");

__global__ void __launch_bounds__(kThreads) gemm_vectorized(Fp32Args p) {
  __shared__ __align__(16) float As[BK][BM];  // transposed: As[k][m]
  __shared__ __align__(16) float Bs[BK][BN];
  const int t = threadIdx.x;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int tr = (t / (BN / TN)) * TM;
  const int tc = (t % (BN / TN)) * TN;
  const int a_row = t / (BK / 4), a_k = (t % (BK / 4)) * 4;  // float4 slot in the A tile
  const int b_row = t / (BN / 4), b_col = (t % (BN / 4)) * 4;

  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < p.K; k0 += BK) {
    const float4 a = load_float4_or_zero(p.A, bm + a_row, k0 + a_k, p.M, p.K, p.lda);
    As[a_k + 0][a_row] = a.x;
    As[a_k + 1][a_row] = a.y;
    As[a_k + 2][a_row] = a.z;
    As[a_k + 3][a_row] = a.w;
    *reinterpret_cast<float4*>(&Bs[b_row][b_col]) = load_float4_or_zero(p.B, k0 + b_row, bn + b_col, p.K, p.N, p.ldb);
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a_reg[TM], b_reg[TN];
      *reinterpret_cast<float4*>(&a_reg[0]) = *reinterpret_cast<const float4*>(&As[k][tr]);
      *reinterpret_cast<float4*>(&a_reg[4]) = *reinterpret_cast<const float4*>(&As[k][tr + 4]);
      *reinterpret_cast<float4*>(&b_reg[0]) = *reinterpret_cast<const float4*>(&Bs[k][tc]);
      *reinterpret_cast<float4*>(&b_reg[4]) = *reinterpret_cast<const float4*>(&Bs[k][tc + 4]);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm + tr + i;
    if (row >= p.M) break;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int col = bn + tc + j;
      if (col < p.N) store_fp32(&p.C[row * p.ldc + col], acc[i][j], p.alpha, p.beta);
    }
  }
}

}  // namespace

namespace detail {
void launch_vectorized(const GemmArgs& args, cudaStream_t stream) {
  const Fp32Args p = fp32_args(args);
  dim3 grid(ceil_div(p.N, BN), ceil_div(p.M, BM));
  launch_kernel(gemm_vectorized, grid, kThreads, 0, stream)(p);
  ANVIL_CUDA_CHECK_LAUNCH("gemm_vectorized");
}
}  // namespace detail

}  // namespace anvil::cuda::gemm
