#pragma once
// The hand-written GEMM ladder: one kernel per rung, each a step from the
// textbook triple loop towards what cuBLAS does, all behind one host call.
//
//   C = alpha * A @ B + beta * C      (row-major; beta == 0 never reads C)
//
//   A: M x K, element (m, k) at A[m * lda + k]
//   B: K x N, element (k, n) at B[k * ldb + n]
//   C: M x N, element (m, n) at C[m * ldc + n]
//
// A, B and C share one dtype; every rung accumulates in float32. C must not
// overlap A or B. Every rung
// is correct for any M, N, K >= 0 (edge tiles are predicated or zero-filled);
// what differs is the dtype and the alignment it needs (see README.md):
//
//   rung                     dtypes            needs
//   01..05                   float32           nothing
//   06 vectorized, 07 warp   float32           A, B 16-byte aligned, lda, ldb % 4 == 0
//   08 tensor-core mma       bfloat16, float16 A, B 16-byte aligned, lda, ldb % 8 == 0, sm_80+
//   09 Hopper wgmma          bfloat16          A, B 16-byte aligned, lda, ldb % 8 == 0,
//                                              sm_90 device, a build with sm_90a
//
// launch_gemm checks these on the host and throws anvil::Error saying which
// one failed; gemm_unsupported_reason() asks the same question without
// throwing, so a caller (the backend's matmul) can fall back to cuBLAS.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace anvil::cuda::gemm {

enum class GemmRung : int {
  Naive = 1,  // 01_naive.cu
  Coalesced = 2,  // 02_coalesced.cu
  SharedTiles = 3,  // 03_shared_tiles.cu
  RegisterTile1D = 4,  // 04_register_tile_1d.cu
  RegisterTile2D = 5,  // 05_register_tile_2d.cu
  Vectorized = 6,  // 06_vectorized.cu
  WarpTiling = 7,  // 07_warp_tiling.cu
  TensorCoreMma = 8,  // 08_tensor_core_mma.cu
  HopperWgmma = 9,  // 09_hopper_wgmma.cu
};
inline constexpr int kGemmRungCount = 9;

enum class GemmDType : uint8_t { Float32, BFloat16, Float16 };

struct GemmArgs {
  GemmDType dtype = GemmDType::Float32;
  int64_t M = 0, N = 0, K = 0;
  const void* A = nullptr;
  int64_t lda = 0;  // >= K
  const void* B = nullptr;
  int64_t ldb = 0;  // >= N
  void* C = nullptr;
  int64_t ldc = 0;  // >= N
  float alpha = 1.0f, beta = 0.0f;
};

// "01_naive", ... "09_hopper_wgmma": the file (and benchmark) name of a rung.
const char* rung_name(GemmRung rung);
const char* dtype_name(GemmDType dtype);
bool rung_supports_dtype(GemmRung rung, GemmDType dtype);

// Empty when `rung` can run `args` on the current device; otherwise why not
// (dtype, alignment, leading dimensions, architecture, build).
std::string gemm_unsupported_reason(GemmRung rung, const GemmArgs& args);

// Queues the GEMM on `stream` (the current device). Throws anvil::Error for
// arguments the rung cannot take and for launch failures.
void launch_gemm(GemmRung rung, const GemmArgs& args, cudaStream_t stream);

// The fastest rung that can run `args` here (09 on Hopper for bfloat16, 08 for
// 16-bit types on sm_80+, 07 for float32 when aligned, else 05), or nullopt-like
// GemmRung{0} when no rung supports the dtype.
GemmRung best_rung(const GemmArgs& args);

// Per-rung launchers (one per .cu file); arguments already validated.
namespace detail {
void launch_naive(const GemmArgs& args, cudaStream_t stream);
void launch_coalesced(const GemmArgs& args, cudaStream_t stream);
void launch_shared_tiles(const GemmArgs& args, cudaStream_t stream);
void launch_register_tile_1d(const GemmArgs& args, cudaStream_t stream);
void launch_register_tile_2d(const GemmArgs& args, cudaStream_t stream);
void launch_vectorized(const GemmArgs& args, cudaStream_t stream);
void launch_warp_tiling(const GemmArgs& args, cudaStream_t stream);
void launch_tensor_core_mma(const GemmArgs& args, cudaStream_t stream);
void launch_hopper_wgmma(const GemmArgs& args, cudaStream_t stream);
bool hopper_wgmma_built();  // false when the build did not target sm_90a
}  // namespace detail

}  // namespace anvil::cuda::gemm
