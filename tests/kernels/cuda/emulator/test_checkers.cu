// The emulated GPU's checkers, each against a kernel broken on purpose: the
// checker must flag it, name the kernel, the thread and the source line, and
// the launch must fail at the next synchronising call. Each correct twin runs
// clean. (Only the emulated build compiles this folder.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/device/dynamic_shared.cuh"
#include "kernels/cuda/emulator/emulator.h"
#include "kernels/cuda/launch/launch.cuh"
#include "tests/kernels/cuda/emulator/checker_test_util.h"

namespace anvil::cuda {
namespace {

using emulator::Checker, emulator::Finding;

// --- kernels, broken and correct ---

__global__ void read_one_past_the_end(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= n) out[0] = in[i];  // <= : one element too far
}

__global__ void copy_n(const float* in, float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) out[i] = in[i];
}

// Reads float4s starting `offset` floats into the buffer: offset 1 is only
// 4-byte aligned, which a GPU's 16-byte vector load faults on.
__global__ void load_float4_at(const float* in, float* out, int offset) {
  const float4 v = reinterpret_cast<const float4*>(in + offset)[threadIdx.x];
  out[threadIdx.x] = v.x + v.y + v.z + v.w;
}

__global__ void everyone_writes_slot_zero(int* out) { out[0] = static_cast<int>(threadIdx.x); }

__global__ void everyone_adds_to_slot_zero(int* out) { atomicAdd(out, 1); }

// Thread t writes smem[t]; then reads its neighbour's slot. Without the
// barrier, the read races with the neighbour's write.
template <bool kBarrier> __global__ void neighbour_sum(const float* in, float* out) {
  __shared__ float smem[64];
  const unsigned t = threadIdx.x;
  smem[t] = in[t];
  if (kBarrier) __syncthreads();
  out[t] = smem[t] + smem[(t + 1) % 64];
}

__global__ void barrier_inside_a_branch(float* out) {
  if (threadIdx.x < 16) {
    __syncthreads();  // only half the block gets here
  }
  out[threadIdx.x] = 1.0f;
}

__global__ void shuffle_from_an_exited_lane(float* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1.0f, 1);  // the mask still names lanes 16..31
}

__global__ void read_shared_nobody_wrote(float* out, int never) {
  __shared__ float smem[32];
  if (threadIdx.x == static_cast<unsigned>(never)) smem[0] = 1.0f;  // never runs; keeps smem from folding to 0
  out[threadIdx.x] = smem[threadIdx.x];
}

// neighbour_sum on dynamic shared memory (the launch's shared_bytes).
template <bool kBarrier> __global__ void neighbour_sum_dynamic(const float* in, float* out) {
  float* smem = dev::dynamic_shared<float>();
  const unsigned t = threadIdx.x, n = blockDim.x;
  smem[t] = in[t % 64];
  if (kBarrier) __syncthreads();
  out[t] = smem[t] + smem[(t + 1) % n];
}

// --- helpers (and checker_test_util.h) ---

using namespace checker_test;

const std::vector<float> kInput = [] {
  std::vector<float> v(64);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.5f * static_cast<float>(i) - 3.0f;
  return v;
}();

// out[t] == in[t % 64] + in[((t + 1) % n) % 64] for the n threads of a neighbour_sum kernel.
void expect_neighbour_sums(const float* out, int n) {
  std::vector<float> got(static_cast<size_t>(n));
  ANVIL_CUDA_CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int t = 0; t < n; ++t) EXPECT_EQ(got[size_t(t)], kInput[size_t(t % 64)] + kInput[size_t((t + 1) % n % 64)]) << t;
}

// --- memcheck ---

TEST(EmulatorMemcheck, ReadPastTheEndOfAnAllocation) {
  float* in = device_alloc<float>(64);
  float* out = device_alloc<float>(1);
  upload(in, kInput);
  launch_kernel(read_one_past_the_end, 1, 128)(in, out, 64);
  ANVIL_CUDA_CHECK_LAUNCH("read_one_past_the_end");
  expect_found(findings_after_failed_sync(), Checker::Memcheck,
               {"read_one_past_the_end", "invalid read", "0 bytes past the end of a 256-byte allocation",
                "thread (64,0,0)", "test_checkers.cu:25"});
  launch_kernel(copy_n, 1, 64)(in, out, 1);
  expect_clean();
  cudaFree(in);
  cudaFree(out);
}

TEST(EmulatorMemcheck, UseAfterFree) {
  float* in = device_alloc<float>(64);
  float* out = device_alloc<float>(64);
  upload(in, kInput);
  ANVIL_CUDA_CHECK(cudaFree(in));
  launch_kernel(copy_n, 1, 64)(in, out, 64);
  expect_found(findings_after_failed_sync(), Checker::Memcheck, {"copy_n", "freed", "test_checkers.cu:30"});
  cudaFree(out);
}

TEST(EmulatorMemcheck, CopiesOutOfBoundsAreRefused) {
  float* d = device_alloc<float>(16);
  std::vector<float> host(32, 1.0f);
  EXPECT_EQ(cudaMemcpy(d, host.data(), 32 * sizeof(float), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  cudaGetLastError();
  const std::vector<Finding> found = emulator::take_findings();
  expect_found(found, Checker::Memcheck, {"cudaMemcpy", "128 bytes", "past the end"});
  cudaFree(d);
}

TEST(EmulatorMemcheck, MisalignedVectorLoad) {
  float* in = device_alloc<float>(64);
  float* out = device_alloc<float>(8);
  upload(in, kInput);
  launch_kernel(load_float4_at, 1, 8)(in, out, 1);
  expect_found(findings_after_failed_sync(), Checker::Memcheck,
               {"load_float4_at", "misaligned 16-byte read", "misaligned address", "test_checkers.cu:36"});
  launch_kernel(load_float4_at, 1, 8)(in, out, 4);  // 16-byte aligned: fine
  expect_clean();
  std::vector<float> got(8);
  ANVIL_CUDA_CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int t = 0; t < 8; ++t) {
    float want = 0;
    for (int j = 0; j < 4; ++j) want += kInput[size_t(4 + 4 * t + j)];
    EXPECT_FLOAT_EQ(got[t], want) << t;
  }
  cudaFree(in);
  cudaFree(out);
}

TEST(EmulatorMemcheck, DynamicSharedMemoryIsBoundedByTheLaunch) {
  float* in = device_alloc<float>(64);
  float* out = device_alloc<float>(64);
  upload(in, kInput);
  // 64 threads, room for 32 floats: threads 32..63 write past it.
  launch_kernel(neighbour_sum_dynamic<true>, 1, 64, 32 * sizeof(float))(in, out);
  expect_found(findings_after_failed_sync(), Checker::Memcheck,
               {"neighbour_sum_dynamic", "dynamic shared memory", "past the launch's 128 bytes", "thread (32,0,0)"});
  launch_kernel(neighbour_sum_dynamic<true>, 1, 64, 64 * sizeof(float))(in, out);
  expect_clean();
  expect_neighbour_sums(out, 64);
  cudaFree(in);
  cudaFree(out);
}

TEST(EmulatorMemcheck, OutOfMemoryIsAnErrorNotACrash) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, emulator::device_memory_bytes() + 1), cudaErrorMemoryAllocation);
  EXPECT_EQ(p, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
}

// --- racecheck ---

TEST(EmulatorRacecheck, MissingBarrierInSharedMemory) {
  float* in = device_alloc<float>(64);
  float* out = device_alloc<float>(64);
  upload(in, kInput);
  launch_kernel(neighbour_sum<false>, 1, 64)(in, out);
  expect_found(findings_after_failed_sync(), Checker::Racecheck,
               {"neighbour_sum", "hazard", "no __syncthreads", "test_checkers.cu:49", "test_checkers.cu:51"});
  launch_kernel(neighbour_sum<true>, 1, 64)(in, out);
  expect_clean();
  expect_neighbour_sums(out, 64);
  cudaFree(in);
  cudaFree(out);
}

TEST(EmulatorRacecheck, MissingBarrierInDynamicSharedMemoryPastTheStaticLimit) {
  // 1024 threads and 200 KiB of dynamic shared memory (needs the opt-in, as on an H100).
  constexpr size_t kBytes = 200 * 1024;
  float* in = device_alloc<float>(64);
  float* out = device_alloc<float>(1024);
  upload(in, kInput);
  EXPECT_EQ(cudaFuncSetAttribute(reinterpret_cast<const void*>(&neighbour_sum_dynamic<false>),
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kBytes)),
            cudaSuccess);
  EXPECT_EQ(cudaFuncSetAttribute(reinterpret_cast<const void*>(&neighbour_sum_dynamic<true>),
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kBytes)),
            cudaSuccess);
  launch_kernel(neighbour_sum_dynamic<false>, 1, 1024, kBytes)(in, out);
  expect_found(findings_after_failed_sync(), Checker::Racecheck,
               {"neighbour_sum_dynamic", "hazard", "no __syncthreads"});
  launch_kernel(neighbour_sum_dynamic<true>, 1, 1024, kBytes)(in, out);
  expect_clean();
  expect_neighbour_sums(out, 1024);
  cudaFree(in);
  cudaFree(out);
}

TEST(EmulatorRacecheck, GlobalWritesWithoutAtomics) {
  int* out = device_alloc<int>(1);
  launch_kernel(everyone_writes_slot_zero, 2, 32)(out);
  expect_found(findings_after_failed_sync(), Checker::Racecheck,
               {"everyone_writes_slot_zero", "write-after-write", "without atomics"});
  ANVIL_CUDA_CHECK(cudaMemset(out, 0, sizeof(int)));
  launch_kernel(everyone_adds_to_slot_zero, 2, 32)(out);
  expect_clean();
  int got = 0;
  ANVIL_CUDA_CHECK(cudaMemcpy(&got, out, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, 64);
  cudaFree(out);
}

// --- synccheck ---

TEST(EmulatorSynccheck, BarrierReachedByPartOfTheBlock) {
  float* out = device_alloc<float>(32);
  launch_kernel(barrier_inside_a_branch, 1, 32)(out);
  expect_found(findings_after_failed_sync(), Checker::Synccheck,
               {"barrier_inside_a_branch", "barrier divergence", "exited", "test_checkers.cu:56"});
  cudaFree(out);
}

TEST(EmulatorSynccheck, ShuffleNamingExitedLanes) {
  float* out = device_alloc<float>(32);
  launch_kernel(shuffle_from_an_exited_lane, 1, 32)(out);
  expect_found(findings_after_failed_sync(), Checker::Synccheck,
               {"shuffle_from_an_exited_lane", "exited", "test_checkers.cu:63"});
  cudaFree(out);
}

// --- initcheck ---

TEST(EmulatorInitcheck, ReadOfFreshDeviceMemory) {
  float* in = device_alloc<float>(64);  // never written
  float* out = device_alloc<float>(64);
  launch_kernel(copy_n, 1, 64)(in, out, 64);
  expect_found(findings_after_failed_sync(), Checker::Initcheck,
               {"copy_n", "uninitialized device memory", "test_checkers.cu:30"});
  cudaFree(in);
  cudaFree(out);
}

TEST(EmulatorInitcheck, ReadOfSharedMemoryNobodyWrote) {
  float* out = device_alloc<float>(32);
  launch_kernel(read_shared_nobody_wrote, 1, 32)(out, 1 << 20);
  expect_found(findings_after_failed_sync(), Checker::Initcheck,
               {"read_shared_nobody_wrote", "uninitialized read", "test_checkers.cu:69"});
  cudaFree(out);
}

// --- launches a real H100 refuses ---

TEST(EmulatorLaunch, ConfigurationsAnH100Refuses) {
  float* out = device_alloc<float>(32);
  launch_kernel(barrier_inside_a_branch, 1, 2048)(out);  // more than 1024 threads per block
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  launch_kernel(barrier_inside_a_branch, dim3(1, 70000), 32)(out);  // grid.y > 65535
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  launch_kernel(barrier_inside_a_branch, 1, 32, 64 * 1024)(out);  // 64 KiB dynamic shared without the opt-in
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_THROW(
      {
        launch_kernel(barrier_inside_a_branch, 1, 2048)(out);
        ANVIL_CUDA_CHECK_LAUNCH("barrier_inside_a_branch");
      },
      Error);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // nothing ran
  cudaFree(out);
}

}  // namespace
}  // namespace anvil::cuda
