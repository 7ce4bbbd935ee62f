// Rung 04 — 1D register tiling: each thread computes a column of 8 outputs.
//
// What it adds: a 64 x 64 block tile with a thin K slice (8), and each of the
// 512 threads accumulates TM = 8 vertically adjacent outputs in registers.
// Per k, a thread loads ONE element of B from shared memory into a register
// and reuses it for 8 multiply-adds against 8 elements of A (broadcast reads:
// all threads of a warp share the same rows).
//
// Why it is faster: shared-memory loads per FMA drop from 2 to about 1.1
// (1 B value + 8 A values per 8 FMAs), so the kernel is far less bound by LDS
// throughput, and each block does 8x more work per synchronisation.
// Expected bottleneck: still shared-memory loads (the A values) and latency.
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm/gemm_common.cuh"
#include "kernels/cuda/launch.cuh"

namespace anvil::cuda::gemm {
namespace {

constexpr int BM = 64, BN = 64, BK = 8, TM = 8;
constexpr int kThreads = BM * BN / TM;  // 512
static_assert(BM * BK == kThreads && BK * BN == kThreads, "one A and one B element per thread per tile");

__global__ void __launch_bounds__(kThreads) gemm_register_tile_1d(Fp32Args p) {
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];
  const int t = threadIdx.x;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int tx = t % BN;  // output column within the tile
  const int ty = t / BN;  // which group of TM rows
  const int a_row = t / BK, a_col = t % BK;  // this thread's load slots
  const int b_row = t / BN, b_col = t % BN;

  float acc[TM] = {};
  for (int k0 = 0; k0 < p.K; k0 += BK) {
    const int ar = bm + a_row, ak = k0 + a_col;
    As[a_row][a_col] = (ar < p.M && ak < p.K) ? p.A[ar * p.lda + ak] : 0.0f;
    const int bk = k0 + b_row, bc = bn + b_col;
    Bs[b_row][b_col] = (bk < p.K && bc < p.N) ? p.B[bk * p.ldb + bc] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float b = Bs[k][tx];  // one register, reused TM times
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[ty * TM + i][k] * b;
    }
    __syncthreads();
  }
  const int col = bn + tx;
  if (col >= p.N) return;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = bm + ty * TM + i;
    if (row < p.M) store_fp32(&p.C[row * p.ldc + col], acc[i], p.alpha, p.beta);
  }
}

}  // namespace

namespace detail {
void launch_register_tile_1d(const GemmArgs& args, cudaStream_t stream) {
  const Fp32Args p = fp32_args(args);
  dim3 grid(ceil_div(p.N, BN), ceil_div(p.M, BM));
  launch_kernel(gemm_register_tile_1d, grid, kThreads, 0, stream)(p);
  ANVIL_CUDA_CHECK_LAUNCH("gemm_register_tile_1d");
}
}  // namespace detail

}  // namespace anvil::cuda::gemm
