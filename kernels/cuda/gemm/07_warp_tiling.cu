// Rung 07 — warp tiling (float32, CUDA cores): block -> warp -> thread tiles,
// double-buffered shared memory.
//
// What it adds over rung 06:
//   * An explicit warp level. The 128 x 128 block tile is split into 8 warp
//     tiles of 64 x 32; inside a warp, lanes form an 8 x 4 grid and each lane
//     computes a 2 x 2 arrangement of 4 x 4 sub-tiles (64 outputs). A warp's
//     shared-memory reads for one k are then two contiguous 128-byte (A) and
//     64-byte (B) segments: conflict-free, each value broadcast to the lanes
//     that share it; the transposing store of A is swizzled (a_column) so it
//     is conflict-free too. This is the same hierarchy tensor-core kernels use
//     (rung 08), with FMAs in place of MMA instructions.
//   * BK = 16 and two shared-memory buffers: the next tile is fetched from
//     global memory into registers while the current one is multiplied, and
//     written to the other buffer, so one __syncthreads per tile suffices and
//     global latency hides behind 16 k-steps of math.
//
// Why it is faster: no bank conflicts, global loads overlap compute, fewer
// barriers. Expected bottleneck: FMA throughput (the goal for a CUDA-core
// SGEMM), as for cuBLAS's float32 SGEMM, the one to compare with (it also
// uses CUDA cores: TF32 tensor cores are off by default for float32 in cuBLAS
// and in anvil).
//
// Needs: A and B 16-byte aligned, lda % 4 == 0, ldb % 4 == 0. Any M, N, K.
#include "kernels/cuda/check.h"
#include "kernels/cuda/gemm/fp32_tile_io.cuh"
#include "kernels/cuda/launch.cuh"

namespace anvil::cuda::gemm {
namespace {

constexpr int BM = 128, BN = 128, BK = 16;
constexpr int WM = 64, WN = 32;  // warp tile
constexpr int kWarpsN = BN / WN;  // 4 (2 x 4 warps)
constexpr int kThreads = (BM / WM) * kWarpsN * 32;  // 256
constexpr int TM = 4, TN = 4;  // one lane's sub-tile
constexpr int kLanesM = 8, kLanesN = 4;  // lanes in a warp: 8 x 4
constexpr int WMITER = WM / (kLanesM * TM);  // 2 sub-tiles down
constexpr int WNITER = WN / (kLanesN * TN);  // 2 sub-tiles across
constexpr int kALoads = BM * BK / 4 / kThreads;  // 2 float4 of A per thread per tile
constexpr int kBLoads = BK * BN / 4 / kThreads;  // 2 float4 of B
static_assert(kLanesM * kLanesN == 32 && WMITER == 2 && WNITER == 2);

// A is stored transposed: thread idx writes column r = idx / 4 of rows c..c+3
// (c = 4 * (idx % 4)). Unswizzled, the 4 lanes with one r and different c hit
// one bank (rows are 128 floats apart): a 4-way conflict on every store, which
// the emulated GPU's counters showed. XORing bits 3-4 of the column with bits
// 2-3 of the row spreads those lanes over 4 banks; it moves whole aligned
// groups of 4 columns within a 32-column block, so the float4 reads of a row
// stay aligned, contiguous and conflict-free.
__device__ __forceinline__ int a_column(int row, int column) { return column ^ (((row >> 2) & 3) << 3); }

// (kThreads, 2): cap registers at 128 so two blocks (16 warps) share an SM;
// ptxas fits the 64 accumulators and fragments without spilling.
__global__ void __launch_bounds__(kThreads, 2) gemm_warp_tiling(Fp32Args p) {
  __shared__ __align__(16) float As[2][BK][BM];  // transposed A tiles
  __shared__ __align__(16) float Bs[2][BK][BN];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int wm = (warp / kWarpsN) * WM, wn = (warp % kWarpsN) * WN;
  const int lm = (lane / kLanesN) * TM, ln = (lane % kLanesN) * TN;

  float4 a_next[kALoads], b_next[kBLoads];
  auto fetch = [&](int k0) {  // global -> registers
#pragma unroll
    for (int i = 0; i < kALoads; ++i) {
      const int idx = t + i * kThreads, r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
      a_next[i] = load_float4_or_zero(p.A, bm + r, k0 + c, p.M, p.K, p.lda);
    }
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) {
      const int idx = t + i * kThreads, r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
      b_next[i] = load_float4_or_zero(p.B, k0 + r, bn + c, p.K, p.N, p.ldb);
    }
  };
  auto stash = [&](int buf) {  // registers -> shared memory
#pragma unroll
    for (int i = 0; i < kALoads; ++i) {
      const int idx = t + i * kThreads, r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
      As[buf][c + 0][a_column(c + 0, r)] = a_next[i].x;
      As[buf][c + 1][a_column(c + 1, r)] = a_next[i].y;
      As[buf][c + 2][a_column(c + 2, r)] = a_next[i].z;
      As[buf][c + 3][a_column(c + 3, r)] = a_next[i].w;
    }
#pragma unroll
    for (int i = 0; i < kBLoads; ++i) {
      const int idx = t + i * kThreads, r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
      *reinterpret_cast<float4*>(&Bs[buf][r][c]) = b_next[i];
    }
  };

  float acc[WMITER * TM][WNITER * TN] = {};
  const int k_tiles = static_cast<int>(ceil_div(p.K, BK));
  if (k_tiles > 0) {
    fetch(0);
    stash(0);
    __syncthreads();
  }
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int buf = kt & 1;
    const bool has_next = kt + 1 < k_tiles;
    if (has_next) fetch((kt + 1) * BK);  // in flight during the math below
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float a_reg[WMITER * TM], b_reg[WNITER * TN];
#pragma unroll
      for (int i = 0; i < WMITER; ++i)
        *reinterpret_cast<float4*>(&a_reg[i * TM]) =
            *reinterpret_cast<const float4*>(&As[buf][k][a_column(k, wm + i * kLanesM * TM + lm)]);
#pragma unroll
      for (int j = 0; j < WNITER; ++j)
        *reinterpret_cast<float4*>(&b_reg[j * TN]) =
            *reinterpret_cast<const float4*>(&Bs[buf][k][wn + j * kLanesN * TN + ln]);
#pragma unroll
      for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    }
    // The other buffer was last read in iteration kt - 1, which every thread
    // finished before the barrier that ended it.
    if (has_next) stash(buf ^ 1);
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < WMITER * TM; ++i) {
    const int row = bm + wm + (i / TM) * kLanesM * TM + lm + i % TM;
    if (row >= p.M) continue;
#pragma unroll
    for (int j = 0; j < WNITER * TN; ++j) {
      const int col = bn + wn + (j / TN) * kLanesN * TN + ln + j % TN;
      if (col < p.N) store_fp32(&p.C[row * p.ldc + col], acc[i][j], p.alpha, p.beta);
    }
  }
}

}  // namespace

namespace detail {
void launch_warp_tiling(const GemmArgs& args, cudaStream_t stream) {
  const Fp32Args p = fp32_args(args);
  dim3 grid(ceil_div(p.N, BN), ceil_div(p.M, BM));
  launch_kernel(gemm_warp_tiling, grid, kThreads, 0, stream)(p);
  ANVIL_CUDA_CHECK_LAUNCH("gemm_warp_tiling");
}
}  // namespace detail

}  // namespace anvil::cuda::gemm
