// Rung 09 — Hopper: wgmma.mma_async + TMA (cp.async.bulk.tensor) with an
// mbarrier pipeline. bfloat16 inputs, float32 accumulation. sm_90a only.
//
// What it adds over rung 08:
//   * wgmma: a WARPGROUP (4 warps, 128 threads) issues one asynchronous
//     64 x 128 x 16 multiply whose operands the tensor core reads straight
//     from shared memory through 64-bit matrix descriptors — no ldmatrix, no
//     operand registers. Hopper's dense bf16 peak is only reachable this way
//     (mma.sync tops out near half of it). SASS: HGMMA.64x128x16.F32.BF16.
//   * TMA: one thread describes a whole 2D tile (CUtensorMap built on the
//     host) and the copy engine moves it into shared memory, applying the
//     128-byte swizzle wgmma expects (bank-conflict-free) and zero-filling
//     whatever lies outside the matrix — edge tiles cost nothing extra.
//   * mbarriers with transaction counts: the TMA unit "arrives" on a stage's
//     barrier when its bytes have landed; consumers wait on the barrier's
//     phase bit. kStages = 4 tiles are in flight, so global latency hides
//     behind three k-tiles of tensor-core work.
//
// Kept simpler than CUTLASS on purpose: no warp specialization (thread 0
// both issues TMA and computes), no clusters/multicast, no persistent tile
// scheduler, a register epilogue instead of a TMA store, one wgmma group in
// flight. Expected bottleneck: the __syncthreads + wgmma.wait_group 0 at
// every k-tile (the tensor core idles while a stage is recycled) and the
// uncoalesced register epilogue.
//
// Shared-memory layouts (per stage, 1024-byte aligned for the 128B swizzle):
//   A tile: 128 rows (m) x 64 k, K-major: each m-row is one 128-byte swizzle
//           row; 8 rows = one 1024-byte swizzle atom. Descriptor: SBO = 1024
//           (next 8 rows), LBO unused. Moving 16 k to the right inside the
//           atom is +32 bytes on the start address.
//   B tile: 64 k-rows x 128 n, N-major, stored as two 64-column halves (one
//           TMA box each, 64 n = 128 bytes per k-row). Descriptor with
//           imm-trans-b = 1: LBO = 8192 (next 64 columns = next half),
//           SBO = 1024 (next 8 k-rows). Moving 16 k down is +2048 bytes.
//
// Needs: sm_90 device, a build that includes sm_90a (CMake compiles this file
// with -gencode arch=compute_90a,code=sm_90a when CMAKE_CUDA_ARCHITECTURES
// contains 90), bfloat16, A and B 16-byte aligned, lda % 8 == 0 and
// ldb % 8 == 0 (TMA global strides are multiples of 16 bytes). Any M, N, K.
#include <cuda.h>  // CUtensorMap and its enums only; the driver entry point is fetched at run time
#include <cuda_bf16.h>

#include "kernels/cuda/check.h"
#include "kernels/cuda/device/dynamic_shared.cuh"
#include "kernels/cuda/gemm/gemm_common.cuh"
#include "kernels/cuda/launch.cuh"

#ifndef ANVIL_GEMM_SM90A
#define ANVIL_GEMM_SM90A 0
#endif

// The device pass for sm_90a defines __CUDA_ARCH_FEAT_SM90_ALL; only there do
// wgmma and setmaxnreg exist. Every other pass compiles a trapping stub.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ANVIL_WGMMA_DEVICE 1
#else
#define ANVIL_WGMMA_DEVICE 0
#endif

namespace anvil::cuda::gemm {
namespace {

constexpr int BM = 128, BN = 128, BK = 64;
constexpr int kStages = 4;
constexpr int kWarpgroups = BM / 64;  // 2 consumer warpgroups, 64 rows each
constexpr int kThreads = kWarpgroups * 128;
constexpr int kHalfN = 64;  // columns of B per TMA box (128 bytes of bf16)
constexpr int kABytes = BM * BK * 2;  // 16 KiB
constexpr int kBHalfBytes = BK * kHalfN * 2;  // 8 KiB
constexpr int kBBytes = BK * BN * 2;  // 16 KiB
constexpr int kStageBytes = kABytes + kBBytes;
constexpr int kSmemBytes = kStages * kStageBytes + 1024;  // + slack to align to 1024

#if ANVIL_WGMMA_DEVICE
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
}
// One arrival that also announces `bytes` of TMA traffic to wait for.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t phase) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(phase)
      : "memory");
}

// 2D TMA load of the box at (c0 = inner coordinate, c1 = outer) into dst.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}

// Shared-memory matrix descriptor: start address, leading and stride byte
// offsets (all >> 4) and the 128-byte swizzle mode (1 in bits 62-63).
__device__ __forceinline__ uint64_t make_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  uint64_t desc = 0;
  desc |= static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4);
  desc |= static_cast<uint64_t>((lbo & 0x3FFFF) >> 4) << 16;
  desc |= static_cast<uint64_t>((sbo & 0x3FFFF) >> 4) << 32;
  desc |= uint64_t{1} << 62;
  return desc;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }

// d (64 x 128, float32) += A (64 x 16, K-major, SW128) * B (16 x 128, N-major, SW128).
// imm-trans-b = 1 tells the tensor core that B's tile is N-major (row-major B);
// scale-d = 1 accumulates into d (zeroed before the first k-tile).
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
      "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}
#endif  // ANVIL_WGMMA_DEVICE

struct WgmmaArgs {
  int M, N, K;
  __nv_bfloat16* C;
  int ldc;
  float alpha, beta;
};

__global__ void __launch_bounds__(kThreads, 1)
    gemm_hopper_wgmma(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                      WgmmaArgs p) {
#if ANVIL_WGMMA_DEVICE
  uint8_t* smem_raw = dev::dynamic_shared<uint8_t>();  // the launch's shared_bytes
  __shared__ __align__(8) uint64_t full[kStages];  // "stage s holds tile kt" barriers
  // The 128-byte swizzle pattern repeats every 1024 bytes and is computed from
  // the address, so every tile must start on a 1024-byte boundary.
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  auto a_tile = [&](int s) { return smem + s * kStageBytes; };
  auto b_tile = [&](int s) { return smem + s * kStageBytes + kABytes; };

  const int t = threadIdx.x, wg = t / 128;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int k_tiles = (p.K + BK - 1) / BK;

  // When N ends inside the first 64 columns of this tile, the second half of
  // B would be a box entirely outside the matrix: skip it. Its stale shared
  // memory then only feeds output columns >= N, which the epilogue drops.
  const bool second_half = bn + kHalfN < p.N;
  const uint32_t stage_bytes = kABytes + (second_half ? 2 : 1) * kBHalfBytes;
  auto issue = [&](int s, int kt) {  // thread 0 only
    // Boxes that reach past the matrix edge still deliver (and count) all
    // their bytes, the outside part as zeros.
    mbarrier_arrive_expect_tx(&full[s], stage_bytes);
    tma_load_2d(a_tile(s), &map_a, kt * BK, bm, &full[s]);
    tma_load_2d(b_tile(s), &map_b, bn, kt * BK, &full[s]);
    if (second_half) tma_load_2d(b_tile(s) + kBHalfBytes, &map_b, bn + kHalfN, kt * BK, &full[s]);
  };

  if (t == 0) {
    for (int s = 0; s < kStages; ++s) mbarrier_init(&full[s], 1);
    // Make the initialised barriers visible to the async (TMA) proxy.
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (t == 0)
    for (int s = 0; s < kStages && s < k_tiles; ++s) issue(s, s);

  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;

  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % kStages;
    mbarrier_wait(&full[s], (kt / kStages) & 1);  // phase flips each time the stage refills
    const uint32_t a_base = smem_u32(a_tile(s)) + wg * 64 * 128;  // this warpgroup's 64 rows
    const uint32_t b_base = smem_u32(b_tile(s));
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      const uint64_t da = make_desc(a_base + kk * 32, 16, 1024);
      const uint64_t db = make_desc(b_base + kk * 16 * 128, kBHalfBytes, 1024);
      wgmma_m64n128k16(d, da, db);
    }
    wgmma_commit();
    wgmma_wait_all();
    __syncthreads();  // both warpgroups are done reading stage s
    if (t == 0 && kt + kStages < k_tiles) issue(s, kt + kStages);
  }

  // Accumulator layout of m64nNk16: warp w of the warpgroup owns rows
  // 16w..16w+15; lane (g = lane/4, q = lane%4) holds, for each 8-column
  // group j, (row g, cols 8j+2q, +1) in d[4j], d[4j+1] and row g+8 in
  // d[4j+2], d[4j+3].
  const int warp = (t % 128) / 32, lane = t % 32, g = lane / 4, q = lane % 4;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int row = bm + wg * 64 + warp * 16 + g + (e / 2) * 8;
      const int col = bn + j * 8 + q * 2 + e % 2;
      if (row < p.M && col < p.N) {
        __nv_bfloat16* c = p.C + static_cast<int64_t>(row) * p.ldc + col;
        const float v =
            p.beta == 0.0f ? p.alpha * d[4 * j + e] : p.alpha * d[4 * j + e] + p.beta * __bfloat162float(*c);
        *c = __float2bfloat16_rn(v);
      }
    }
  }
#else
  __trap();  // not built for sm_90a; the host never launches this (hopper_wgmma_built())
#endif
}

#if ANVIL_GEMM_SM90A
using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                 const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                 CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled is a driver API call; fetching it through the
// runtime avoids linking libcuda directly.
EncodeTiled encode_tiled() {
  static EncodeTiled fn = [] {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult status{};
    ANVIL_CUDA_CHECK(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &status));
    ANVIL_CHECK(status == cudaDriverEntryPointSuccess && ptr != nullptr,
                "gemm 09_hopper_wgmma: the driver has no cuTensorMapEncodeTiled (needs CUDA 12+ driver)");
    return reinterpret_cast<EncodeTiled>(ptr);
  }();
  return fn;
}

// A row-major rows x cols bf16 matrix, read in box_rows x box_cols boxes with
// the 128-byte swizzle; reads outside the matrix return zeros.
CUtensorMap make_map(const void* base, int64_t rows, int64_t cols, int64_t ld, uint32_t box_rows, uint32_t box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * 2};  // bytes, dims 1.. only
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t elem_strides[2] = {1, 1};
  const CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides,
                                    box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  ANVIL_CHECK(r == CUDA_SUCCESS, "gemm 09_hopper_wgmma: cuTensorMapEncodeTiled failed with CUresult ",
              static_cast<int>(r), " for a ", rows, "x", cols, " matrix with leading dimension ", ld);
  return map;
}
#endif

}  // namespace

namespace detail {

bool hopper_wgmma_built() { return ANVIL_GEMM_SM90A != 0; }

void launch_hopper_wgmma(const GemmArgs& args, cudaStream_t stream) {
#if ANVIL_GEMM_SM90A
  if (args.K == 0) {  // no tiles to load (a tensor map cannot describe an empty matrix)
    launch_tensor_core_mma(args, stream);
    return;
  }
  const CUtensorMap map_a = make_map(args.A, args.M, args.K, args.lda, BM, BK);
  const CUtensorMap map_b = make_map(args.B, args.K, args.N, args.ldb, BK, kHalfN);
  // Per device (the attribute belongs to the current context), so set it on
  // every launch: it is a cheap host-side call.
  ANVIL_CUDA_CHECK(cudaFuncSetAttribute(gemm_hopper_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  WgmmaArgs p{static_cast<int>(args.M),
              static_cast<int>(args.N),
              static_cast<int>(args.K),
              static_cast<__nv_bfloat16*>(args.C),
              static_cast<int>(args.ldc),
              args.alpha,
              args.beta};
  dim3 grid(ceil_div(p.N, BN), ceil_div(p.M, BM));
  launch_kernel(gemm_hopper_wgmma, grid, kThreads, kSmemBytes, stream)(map_a, map_b, p);
  ANVIL_CUDA_CHECK_LAUNCH("gemm_hopper_wgmma");
#else
  fail(
      "gemm 09_hopper_wgmma: this build does not include sm_90a code "
      "(configure with CMAKE_CUDA_ARCHITECTURES containing 90 or 90a)");
#endif
}

}  // namespace detail

}  // namespace anvil::cuda::gemm
