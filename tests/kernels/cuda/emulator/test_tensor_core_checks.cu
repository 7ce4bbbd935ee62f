// The emulated GPU's checkers on the tensor-core instructions
// (kernels/cuda/device/tensor_core.cuh): ldmatrix's shared-memory reads and
// cp.async's copies go through racecheck, initcheck and memcheck, and mma and
// ldmatrix are warp collectives under synccheck. Each broken kernel has a
// correct twin that runs clean. (test_tensor_core.cpp checks the values.)
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/device/tensor_core.cuh"
#include "kernels/cuda/launch/launch.cuh"
#include "tests/kernels/cuda/emulator/checker_test_util.h"

namespace anvil::cuda {
namespace {

using namespace checker_test;

// Warp 1 stores the 16 x 16 tile that warp 0 then loads as an A fragment:
// without the barrier, warp 0's ldmatrix reads race with warp 1's stores.
template <bool kBarrier> __global__ void fragment_of_another_warps_tile(const uint16_t* in, uint32_t* out) {
  __shared__ __align__(16) uint16_t tile[16][16];
  const unsigned t = threadIdx.x, lane = t % 32;
  if (t >= 32)
    for (unsigned i = lane; i < 256; i += 32) tile[i / 16][i % 16] = in[i];
  if (kBarrier) __syncthreads();
  if (t < 32) {
    uint32_t r[4];
    dev::ldmatrix_x4(r, &tile[lane % 16][(lane / 16) * 8]);
    for (int i = 0; i < 4; ++i) out[lane * 4 + i] = r[i];
  }
}

// Lanes 16-31 leave before the mma that needs the whole warp.
__global__ void mma_by_half_a_warp(float* out) {
  if (threadIdx.x >= 16) return;
  float d[4] = {};
  const uint32_t a[4] = {}, b[2] = {};
  dev::mma_m16n8k16<__nv_bfloat16>(d, a, b);
  out[threadIdx.x] = d[0];
}

// Thread 0 copies 16 bytes whose first `src_bytes` come from `src`.
__global__ void copy_chunk(const uint16_t* src, int src_bytes, uint16_t* out) {
  __shared__ __align__(16) uint16_t chunk[8];
  dev::cp_async_16(chunk, src, src_bytes);
  dev::cp_async_commit();
  dev::cp_async_wait<0>();
  for (int i = 0; i < 8; ++i) out[i] = chunk[i];
}

// ldmatrix given a global address instead of a shared one.
__global__ void ldmatrix_from_global(const uint16_t* in, uint32_t* out) {
  uint32_t r[4];
  dev::ldmatrix_x4(r, in + threadIdx.x * 8);
  out[threadIdx.x] = r[0];
}

std::vector<uint16_t> iota16(size_t n) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint16_t>(i + 1);
  return v;
}

TEST(EmulatorTensorCore, RacecheckFindsFragmentLoadOfAnotherWarpsStoresWithoutBarrier) {
  auto* in = device_alloc<uint16_t>(256);
  auto* out = device_alloc<uint32_t>(128);
  upload(in, iota16(256));
  launch_kernel(fragment_of_another_warps_tile<false>, 1, 64)(in, out);
  expect_found(findings_after_failed_sync(), Checker::Racecheck,
               {"fragment_of_another_warps_tile", "hazard", "no __syncthreads", "tensor_core.cuh"});
  launch_kernel(fragment_of_another_warps_tile<true>, 1, 64)(in, out);
  expect_clean();
  std::vector<uint32_t> got(128);
  ANVIL_CUDA_CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  for (int lane = 0; lane < 32; ++lane) {  // an A fragment: a[i] = A[g + 8 (i % 2)][2q + 8 (i / 2) + {0, 1}]
    const int g = lane / 4, q = lane % 4;
    for (int i = 0; i < 4; ++i) {
      const int at = (g + 8 * (i % 2)) * 16 + 2 * q + 8 * (i / 2);
      EXPECT_EQ(got[size_t(lane * 4 + i)], uint32_t(at + 1) | uint32_t(at + 2) << 16) << lane << " " << i;
    }
  }
  cudaFree(in);
  cudaFree(out);
}

TEST(EmulatorTensorCore, SynccheckFindsMmaReachedByPartOfTheWarp) {
  auto* out = device_alloc<float>(32);
  launch_kernel(mma_by_half_a_warp, 1, 32)(out);
  expect_found(findings_after_failed_sync(), Checker::Synccheck, {"mma_by_half_a_warp", "exited"});
  cudaFree(out);
}

TEST(EmulatorTensorCore, CpAsyncReadsOnlySrcSizeBytesAndZeroFillsTheRest) {
  auto* in = device_alloc<uint16_t>(12);  // 24 bytes: 16 from element 4 runs 8 bytes past the end
  auto* out = device_alloc<uint16_t>(8);
  upload(in, iota16(12));
  launch_kernel(copy_chunk, 1, 1)(in + 8, 16, out);
  expect_found(findings_after_failed_sync(), Checker::Memcheck, {"copy_chunk", "past the end", "tensor_core.cuh"});
  launch_kernel(copy_chunk, 1, 1)(in + 8, 8, out);
  expect_clean();
  std::vector<uint16_t> got(8);
  ANVIL_CUDA_CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, (std::vector<uint16_t>{9, 10, 11, 12, 0, 0, 0, 0}));
  launch_kernel(copy_chunk, 1, 1)(in + 4, 8, out);  // 8-byte aligned only: cp.async needs 16
  expect_found(findings_after_failed_sync(), Checker::Memcheck, {"copy_chunk", "16-byte aligned"});
  cudaFree(in);
  cudaFree(out);
}

TEST(EmulatorTensorCore, MemcheckFindsLdmatrixOfGlobalMemory) {
  auto* in = device_alloc<uint16_t>(256);
  auto* out = device_alloc<uint32_t>(32);
  upload(in, iota16(256));
  launch_kernel(ldmatrix_from_global, 1, 32)(in, out);
  expect_found(findings_after_failed_sync(), Checker::Memcheck,
               {"ldmatrix_from_global", "not shared memory", "tensor_core.cuh"});
  cudaFree(in);
  cudaFree(out);
}

}  // namespace
}  // namespace anvil::cuda
