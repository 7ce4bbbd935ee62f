// Rung 05 — 2D register tiling: each thread computes an 8 x 8 block of C.
//
// What it adds: a 128 x 128 block tile (K slice 8) computed by 256 threads,
// each holding an 8 x 8 accumulator tile. Per k, a thread loads 8 values of A
// and 8 of B into registers and does their 64 pairwise multiply-adds (an
// outer product).
//
// Why it is faster: 16 shared-memory loads now feed 64 FMAs (4 FMAs per load,
// vs ~1 in rung 04), so arithmetic, not LDS, starts to dominate; the larger
// tile also halves global traffic per FLOP again. Expected bottleneck: the
// scalar, partly bank-conflicted shared-memory accesses (A is read down a
// column) and scalar global loads.
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm/gemm_common.cuh"
#include "kernels/cuda/launch.cuh"

namespace anvil::cuda::gemm {
namespace {

constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
constexpr int kALoads = BM * BK / kThreads;  // 4 elements of A per thread per tile
constexpr int kBLoads = BK * BN / kThreads;  // 4 elements of B

__global__ void __launch_bounds__(kThreads) gemm_register_tile_2d(Fp32Args p) {
  __shared__ float As[BM][BK];
  __shared__ float Bs[BK][BN];
  const int t = threadIdx.x;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int tr = (t / (BN / TN)) * TM;  // first row of this thread's 8 x 8 tile
  const int tc = (t % (BN / TN)) * TN;  // first column

  float acc[TM][TN] = {};
  float a_reg[TM], b_reg[TN];
  for (int k0 = 0; k0 < p.K; k0 += BK) {
#pragma unroll
    for (int i = 0; i < kALoads; ++i) {
      const int idx = t + i * kThreads;  // consecutive threads: consecutive k, then rows
      const int r = idx / BK, c = idx % BK;
      const int gr = bm + r, gk = k0 + c;
      As[r][c] = (gr < p.M && gk < p.K) ? p.A[gr * p.lda + gk] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) {
      const int idx = t + i * kThreads;
      const int r = idx / BN, c = idx % BN;
      const int gk = k0 + r, gc = bn + c;
      Bs[r][c] = (gk < p.K && gc < p.N) ? p.B[gk * p.ldb + gc] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int i = 0; i < TM; ++i) a_reg[i] = As[tr + i][k];
#pragma unroll
      for (int j = 0; j < TN; ++j) b_reg[j] = Bs[k][tc + j];
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
void launch_register_tile_2d(const GemmArgs& args, cudaStream_t stream) {
  const Fp32Args p = fp32_args(args);
  dim3 grid(ceil_div(p.N, BN), ceil_div(p.M, BM));
  launch_kernel(gemm_register_tile_2d, grid, kThreads, 0, stream)(p);
  ANVIL_CUDA_CHECK_LAUNCH("gemm_register_tile_2d");
}
}  // namespace detail

}  // namespace anvil::cuda::gemm
