// Host side of the GEMM ladder: argument checks shared by every rung, and the
// dispatch from GemmRung to the rung's launcher.
#include "kernels/cuda/gemm/gemm.h"

#include <climits>
#include <cstdint>
#include <string>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"

namespace anvil::cuda::gemm {
namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

struct DeviceArch {
  int major = 0, minor = 0;
};
DeviceArch current_arch() {
  int device = 0;
  ANVIL_CUDA_CHECK(cudaGetDevice(&device));
  DeviceArch a;
  ANVIL_CUDA_CHECK(cudaDeviceGetAttribute(&a.major, cudaDevAttrComputeCapabilityMajor, device));
  ANVIL_CUDA_CHECK(cudaDeviceGetAttribute(&a.minor, cudaDevAttrComputeCapabilityMinor, device));
  return a;
}

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

const char* rung_name(GemmRung rung) {
  switch (rung) {
    case GemmRung::Naive:
      return "01_naive";
    case GemmRung::Coalesced:
      return "02_coalesced";
    case GemmRung::SharedTiles:
      return "03_shared_tiles";
    case GemmRung::RegisterTile1D:
      return "04_register_tile_1d";
    case GemmRung::RegisterTile2D:
      return "05_register_tile_2d";
    case GemmRung::Vectorized:
      return "06_vectorized";
    case GemmRung::WarpTiling:
      return "07_warp_tiling";
    case GemmRung::TensorCoreMma:
      return "08_tensor_core_mma";
    case GemmRung::HopperWgmma:
      return "09_hopper_wgmma";
  }
  return "unknown_rung";
}

const char* dtype_name(GemmDType dtype) {
  switch (dtype) {
    case GemmDType::Float32:
      return "float32";
    case GemmDType::BFloat16:
      return "bfloat16";
    case GemmDType::Float16:
      return "float16";
  }
  return "unknown";
}

bool rung_supports_dtype(GemmRung rung, GemmDType dtype) {
  switch (rung) {
    case GemmRung::TensorCoreMma:
      return dtype == GemmDType::BFloat16 || dtype == GemmDType::Float16;
    case GemmRung::HopperWgmma:
      return dtype == GemmDType::BFloat16;
    default:
      return dtype == GemmDType::Float32;
  }
}

std::string gemm_unsupported_reason(GemmRung rung, const GemmArgs& a) {
  const int r = static_cast<int>(rung);
  if (r < 1 || r > kGemmRungCount) return "unknown rung " + str(r);
  if (!rung_supports_dtype(rung, a.dtype))
    return std::string(rung_name(rung)) + " does not support " + dtype_name(a.dtype) +
           " (01-07: float32; 08: bfloat16, float16; 09: bfloat16)";
  if (a.M < 0 || a.N < 0 || a.K < 0) return "negative size M=" + str(a.M) + " N=" + str(a.N) + " K=" + str(a.K);
  if (a.M == 0 || a.N == 0) return {};  // nothing to do, nothing to check
  if (a.lda < a.K || a.ldb < a.N || a.ldc < a.N)
    return "leading dimensions too small: need lda >= K, ldb >= N, ldc >= N; got M=" + str(a.M) + " N=" + str(a.N) +
           " K=" + str(a.K) + " lda=" + str(a.lda) + " ldb=" + str(a.ldb) + " ldc=" + str(a.ldc);
  // Kernels index with 32-bit ints: every element offset must fit.
  if (a.M * a.lda > INT_MAX || a.K * a.ldb > INT_MAX || a.M * a.ldc > INT_MAX)
    return "matrices too large for 32-bit indexing (M*lda, K*ldb and M*ldc must be < 2^31)";
  if (a.C == nullptr || (a.K > 0 && (a.A == nullptr || a.B == nullptr))) return "null data pointer";

  // gridDim.y is at most 65535; each rung's y dimension tiles M (N for 01)
  // by its block tile, so a very tall C cannot be launched in one grid.
  {
    int64_t extent = a.M, tile = 128;  // 05..09: BM = 128
    if (rung == GemmRung::Naive)
      extent = a.N, tile = 32;
    else if (rung == GemmRung::Coalesced)
      tile = 8;
    else if (rung == GemmRung::SharedTiles)
      tile = 32;
    else if (rung == GemmRung::RegisterTile1D)
      tile = 64;
    if ((extent + tile - 1) / tile > 65535)
      return std::string(rung_name(rung)) + " cannot launch: " + (rung == GemmRung::Naive ? "N=" : "M=") + str(extent) +
             " needs more than 65535 blocks along grid y (tile " + str(tile) + ")";
  }

  const bool vector_rung = rung == GemmRung::Vectorized || rung == GemmRung::WarpTiling;
  const bool tc_rung = rung == GemmRung::TensorCoreMma || rung == GemmRung::HopperWgmma;
  if (vector_rung || tc_rung) {
    const int64_t multiple = vector_rung ? 4 : 8;  // elements per 16 bytes
    if (!aligned16(a.A) || !aligned16(a.B)) return std::string(rung_name(rung)) + " needs A and B 16-byte aligned";
    if (a.lda % multiple != 0 || a.ldb % multiple != 0)
      return std::string(rung_name(rung)) + " needs lda and ldb to be multiples of " + str(multiple) +
             "; got lda=" + str(a.lda) + " ldb=" + str(a.ldb);
  }
  if (tc_rung) {
    const DeviceArch arch = current_arch();
    if (rung == GemmRung::TensorCoreMma && arch.major < 8)
      return "08_tensor_core_mma needs compute capability 8.0+; this device is " + str(arch.major) + "." +
             str(arch.minor);
    if (rung == GemmRung::HopperWgmma) {
      if (!detail::hopper_wgmma_built())
        return "09_hopper_wgmma was not built (needs CMAKE_CUDA_ARCHITECTURES containing 90 or 90a; the emulated GPU "
               "has no wgmma or TMA)";
      if (arch.major != 9 || arch.minor != 0)
        return "09_hopper_wgmma needs an sm_90 (Hopper) device; this device is " + str(arch.major) + "." +
               str(arch.minor);
    }
  }
  return {};
}

void launch_gemm(GemmRung rung, const GemmArgs& args, cudaStream_t stream) {
  const std::string why = gemm_unsupported_reason(rung, args);
  ANVIL_CHECK(why.empty(), "launch_gemm: ", why);
  if (args.M == 0 || args.N == 0) return;
  switch (rung) {
    case GemmRung::Naive:
      return detail::launch_naive(args, stream);
    case GemmRung::Coalesced:
      return detail::launch_coalesced(args, stream);
    case GemmRung::SharedTiles:
      return detail::launch_shared_tiles(args, stream);
    case GemmRung::RegisterTile1D:
      return detail::launch_register_tile_1d(args, stream);
    case GemmRung::RegisterTile2D:
      return detail::launch_register_tile_2d(args, stream);
    case GemmRung::Vectorized:
      return detail::launch_vectorized(args, stream);
    case GemmRung::WarpTiling:
      return detail::launch_warp_tiling(args, stream);
    case GemmRung::TensorCoreMma:
      return detail::launch_tensor_core_mma(args, stream);
    case GemmRung::HopperWgmma:
      return detail::launch_hopper_wgmma(args, stream);
  }
}

GemmRung best_rung(const GemmArgs& args) {
  const GemmRung order[] = {GemmRung::HopperWgmma, GemmRung::TensorCoreMma, GemmRung::WarpTiling,
                            GemmRung::RegisterTile2D};
  for (GemmRung r : order)
    if (gemm_unsupported_reason(r, args).empty()) return r;
  return GemmRung{0};
}

}  // namespace anvil::cuda::gemm
