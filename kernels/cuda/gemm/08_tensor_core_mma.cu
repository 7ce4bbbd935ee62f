// Rung 08 — tensor cores: mma.sync m16n8k16 (bfloat16 / float16 inputs,
// float32 accumulation), ldmatrix fragment loads, cp.async double buffering.
//
// What it adds over rung 07:
//   * The warp-level multiply is one tensor-core instruction per 16 x 8 x 16
//     sub-problem (HMMA.16816.F32.BF16 in SASS) instead of 16 x 8 x 16 = 2048
//     FMAs spread over 32 lanes: a dense-math throughput ~8x higher than FP32
//     FMAs on Ampere/Hopper.
//   * Fragments come from shared memory through ldmatrix (one instruction
//     loads four 8 x 8 16-bit matrices spread across the warp exactly as mma
//     expects; ".trans" transposes B's row-major tiles on the way).
//   * Global -> shared copies are cp.async (the copy bypasses registers and
//     runs in the background); two shared-memory stages let tile k+1 arrive
//     while tile k is multiplied. Out-of-range chunks are zero-filled by
//     cp.async's src-size operand, so edge tiles need no special math.
//   * Shared-memory rows are padded by 16 bytes so the 8 row addresses of an
//     ldmatrix phase fall in 8 different bank groups (no conflicts).
//
// Tiles: 128 x 128 block tile, BK = 32, 8 warps as 2 x 4, each warp 64 x 32
// (4 x 4 mma tiles, 64 float accumulators per lane).
//
// Expected bottleneck: with only two stages and ldmatrix/mma issued from the
// same warps, latency is not fully hidden; mma.sync itself runs at roughly
// half of Hopper's wgmma peak, so on an H100 it stays well below cuBLAS bf16
// (which uses wgmma); Ampere-class GPUs have no wgmma to lose to.
//
// Needs: sm_80+, A and B 16-byte aligned, lda % 8 == 0, ldb % 8 == 0 (each
// cp.async moves 8 aligned elements). Any M, N, K.
//
// The instructions are ../device/tensor_core.cuh's wrappers (fragment
// layouts documented there): inline PTX under nvcc, and warp collectives on
// the emulated GPU, where this rung runs under every checker too.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/tensor_core.cuh"
#include "kernels/cuda/gemm/gemm_common.cuh"
#include "kernels/cuda/launch.cuh"

namespace anvil::cuda::gemm {
namespace {

constexpr int BM = 128, BN = 128, BK = 32;
constexpr int WM = 64, WN = 32;
constexpr int kWarpsN = BN / WN;  // 4
constexpr int kThreads = (BM / WM) * kWarpsN * 32;  // 256
constexpr int MI = WM / 16, NI = WN / 8;  // 4 x 4 mma tiles per warp
constexpr int kPad = 8;  // elements (16 bytes) of row padding
constexpr int kAStride = BK + kPad, kBStride = BN + kPad;
constexpr int kChunk = 8;  // elements per 16-byte cp.async
constexpr int kAChunks = BM * BK / kChunk / kThreads;  // 2 per thread per tile
constexpr int kBChunks = BK * BN / kChunk / kThreads;  // 2

template <typename T> __device__ __forceinline__ float to_float(T v);
template <> __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <> __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }

template <typename T> struct MmaArgs {
  int M, N, K;
  const T* A;
  int lda;
  const T* B;
  int ldb;
  T* C;
  int ldc;
  float alpha, beta;
};

template <typename T> __global__ void __launch_bounds__(kThreads) gemm_tensor_core_mma(MmaArgs<T> p) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  // 16-bit storage as raw bits: __shared__ arrays of class types are not allowed.
  __shared__ __align__(16) uint16_t As[2][BM][kAStride];
  __shared__ __align__(16) uint16_t Bs[2][BK][kBStride];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int wm = (warp / kWarpsN) * WM, wn = (warp % kWarpsN) * WN;

  auto load_tile = [&](int buf, int k0) {
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
      const int idx = t + i * kThreads;
      const int r = idx / (BK / kChunk), c = (idx % (BK / kChunk)) * kChunk;
      const int gr = bm + r, gk = k0 + c;
      const bool ok = gr < p.M && gk < p.K;
      const int bytes = ok ? min(kChunk, p.K - gk) * 2 : 0;
      dev::cp_async_16(&As[buf][r][c], ok ? p.A + gr * p.lda + gk : p.A, bytes);
    }
#pragma unroll
    for (int i = 0; i < kBChunks; ++i) {
      const int idx = t + i * kThreads;
      const int r = idx / (BN / kChunk), c = (idx % (BN / kChunk)) * kChunk;
      const int gk = k0 + r, gc = bn + c;
      const bool ok = gk < p.K && gc < p.N;
      const int bytes = ok ? min(kChunk, p.N - gc) * 2 : 0;
      dev::cp_async_16(&Bs[buf][r][c], ok ? p.B + gk * p.ldb + gc : p.B, bytes);
    }
  };

  float acc[MI][NI][4] = {};
  const int k_tiles = (p.K + BK - 1) / BK;
  if (k_tiles > 0) load_tile(0, 0);
  dev::cp_async_commit();
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 < k_tiles) load_tile(buf ^ 1, (kt + 1) * BK);
    dev::cp_async_commit();  // possibly empty: keeps "all but the newest group" meaning tile kt
    dev::cp_async_wait<1>();
    __syncthreads();  // tile kt is visible to every warp
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      uint32_t a[MI][4], b[NI][2];
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)  // lanes 0-15: rows at k, lanes 16-31: rows at k + 8
        dev::ldmatrix_x4(a[mi], &As[buf][wm + mi * 16 + lane % 16][kk + (lane / 16) * 8]);
#pragma unroll
      for (int np = 0; np < NI / 2; ++np) {  // one x4.trans = k16 x n16 = two n8 B fragments
        uint32_t r[4];
        dev::ldmatrix_x4_trans(r, &Bs[buf][kk + lane % 16][wn + np * 16 + (lane / 16) * 8]);
        b[2 * np][0] = r[0];
        b[2 * np][1] = r[1];
        b[2 * np + 1][0] = r[2];
        b[2 * np + 1][1] = r[3];
      }
#pragma unroll
      for (int mi = 0; mi < MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < NI; ++ni) dev::mma_m16n8k16<T>(acc[mi][ni], a[mi], b[ni]);
    }
    __syncthreads();  // every warp is done with `buf` before it is refilled
  }

  // Accumulator layout of m16n8: lane holds rows g and g + 8, columns 2q, 2q + 1.
  const int g = lane / 4, q = lane % 4;
#pragma unroll
  for (int mi = 0; mi < MI; ++mi) {
#pragma unroll
    for (int ni = 0; ni < NI; ++ni) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = bm + wm + mi * 16 + g + (e / 2) * 8;
        const int col = bn + wn + ni * 8 + q * 2 + e % 2;
        if (row < p.M && col < p.N) {
          T* c = p.C + row * p.ldc + col;
          const float v = p.beta == 0.0f ? p.alpha * acc[mi][ni][e] : p.alpha * acc[mi][ni][e] + p.beta * to_float(*c);
          *c = from_float<T>(v);
        }
      }
    }
  }
#else
  __trap();  // not built for sm_80+: the host refuses to launch this (see gemm.cpp)
#endif
}

template <typename T> void launch_typed(const GemmArgs& a, cudaStream_t stream) {
  MmaArgs<T> p{static_cast<int>(a.M),
               static_cast<int>(a.N),
               static_cast<int>(a.K),
               static_cast<const T*>(a.A),
               static_cast<int>(a.lda),
               static_cast<const T*>(a.B),
               static_cast<int>(a.ldb),
               static_cast<T*>(a.C),
               static_cast<int>(a.ldc),
               a.alpha,
               a.beta};
  dim3 grid(ceil_div(p.N, BN), ceil_div(p.M, BM));
  launch_kernel(gemm_tensor_core_mma<T>, grid, kThreads, 0, stream)(p);
  ANVIL_CUDA_CHECK_LAUNCH("gemm_tensor_core_mma");
}

}  // namespace

namespace detail {
void launch_tensor_core_mma(const GemmArgs& args, cudaStream_t stream) {
  if (args.dtype == GemmDType::BFloat16) {
    launch_typed<__nv_bfloat16>(args, stream);
  } else {
    launch_typed<__half>(args, stream);
  }
}
}  // namespace detail

}  // namespace anvil::cuda::gemm
