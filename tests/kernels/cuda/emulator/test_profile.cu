// The emulated GPU's memory counters on kernels whose cost is known by
// construction: coalesced and strided copies, a tile transpose with and
// without padding, vector loads, atomics, barriers and divergent lanes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/emulator/profile.h"
#include "kernels/cuda/launch/launch.cuh"

namespace anvil::cuda {
namespace {

using emulator::KernelProfile;

__global__ void copy_with_stride(const float* in, float* out, int stride) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i * static_cast<unsigned>(stride)];
}

// A 32x32 tile transposed through shared memory; kPad = 1 pads each row so a
// column read touches 32 distinct banks.
template <int kPad> __global__ void transpose_tile(const float* in, float* out) {
  __shared__ float tile[32][32 + kPad];
  const unsigned x = threadIdx.x, y = threadIdx.y;
  tile[y][x] = in[y * 32 + x];
  __syncthreads();
  out[y * 32 + x] = tile[x][y];
}

__global__ void copy_float4(const float4* in, float4* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];
}

__global__ void count_into_one_slot(int* counter) { atomicAdd(counter, 1); }

__global__ void even_lanes_copy(const float* in, float* out) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i % 2 == 0) out[i] = in[i];
}

template <typename T> T* device_buffer(size_t n) {
  void* p = nullptr;
  ANVIL_CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
  ANVIL_CUDA_CHECK(cudaMemset(p, 0, n * sizeof(T)));
  return static_cast<T*>(p);
}

// Runs `launch` with profiling on and returns its one launch's profile.
template <typename Launch> KernelProfile profile_one(Launch&& launch) {
  emulator::take_profiles();
  emulator::set_profiling(true);
  launch();
  ANVIL_CUDA_CHECK(cudaDeviceSynchronize());
  emulator::set_profiling(false);
  std::vector<KernelProfile> p = emulator::take_profiles();
  EXPECT_EQ(p.size(), 1u);
  return p.empty() ? KernelProfile{} : p[0];
}

class EmulatorProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    in_ = device_buffer<float>(4096 * 4);
    out_ = device_buffer<float>(4096 * 4);
  }
  void TearDown() override {
    cudaFree(in_);
    cudaFree(out_);
  }
  float* in_ = nullptr;
  float* out_ = nullptr;
};

TEST_F(EmulatorProfile, ACoalescedCopyCostsFourSectorsPerRequest) {
  const KernelProfile p = profile_one([&] { launch_kernel(copy_with_stride, 8, 128)(in_, out_, 1); });
  EXPECT_NE(p.kernel.find("copy_with_stride"), std::string::npos) << p.kernel;
  EXPECT_EQ(p.grid[0], 8u);
  EXPECT_EQ(p.block[0], 128u);
  EXPECT_EQ(p.totals.load_requests, 32u);  // 1024 threads = 32 warps, one load each
  EXPECT_EQ(p.totals.store_requests, 32u);
  EXPECT_DOUBLE_EQ(p.totals.sectors_per_request(), 4.0);
  EXPECT_DOUBLE_EQ(p.totals.sector_efficiency(), 1.0);
  EXPECT_DOUBLE_EQ(p.totals.lanes_per_request(), 32.0);
  EXPECT_EQ(p.unique_bytes_read, 4096u);
  EXPECT_EQ(p.unique_bytes_written, 4096u);
  ASSERT_FALSE(p.sites.empty());
  EXPECT_NE(p.sites[0].location.find("test_profile.cu:20"), std::string::npos) << p.sites[0].location;
}

TEST_F(EmulatorProfile, AStrideOfTwoHalvesTheEfficiencyOfTheLoads) {
  const KernelProfile p = profile_one([&] { launch_kernel(copy_with_stride, 8, 128)(in_, out_, 2); });
  EXPECT_EQ(p.totals.load_sectors, 32u * 8);
  EXPECT_EQ(p.totals.store_sectors, 32u * 4);
  EXPECT_DOUBLE_EQ(p.totals.sector_efficiency(), (32.0 * 4 + 32 * 4) / (32.0 * 8 + 32 * 4));
  // Every other float of 8 KiB: all 256 of its sectors are touched.
  EXPECT_EQ(p.unique_bytes_read, 8192u);
}

TEST_F(EmulatorProfile, AnUnpaddedTileColumnIsA32WayBankConflict) {
  const KernelProfile bad = profile_one([&] { launch_kernel(transpose_tile<0>, 1, dim3(32, 32))(in_, out_); });
  EXPECT_EQ(bad.totals.shared_requests, 64u);  // 32 warps, one shared store and one shared load each
  EXPECT_DOUBLE_EQ(bad.totals.bank_conflict_ways(), (32.0 + 1) / 2);
  EXPECT_EQ(bad.barriers, 32u);  // one __syncthreads, 32 warps
  const KernelProfile good = profile_one([&] { launch_kernel(transpose_tile<1>, 1, dim3(32, 32))(in_, out_); });
  EXPECT_DOUBLE_EQ(good.totals.bank_conflict_ways(), 1.0);
  EXPECT_DOUBLE_EQ(good.totals.sector_efficiency(), 1.0);
  std::vector<float> got(1024), want(1024);
  std::vector<float> host(1024);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 97) - 40.0f;
  ANVIL_CUDA_CHECK(cudaMemcpy(in_, host.data(), 4096, cudaMemcpyHostToDevice));
  launch_kernel(transpose_tile<1>, 1, dim3(32, 32))(in_, out_);
  ANVIL_CUDA_CHECK(cudaMemcpy(got.data(), out_, 4096, cudaMemcpyDeviceToHost));
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x) EXPECT_EQ(got[size_t(y * 32 + x)], host[size_t(x * 32 + y)]);
}

TEST_F(EmulatorProfile, Float4AccessesCostSixteenSectorsPerRequest) {
  const KernelProfile p = profile_one([&] {
    launch_kernel(copy_float4, 2, 128)(reinterpret_cast<const float4*>(in_), reinterpret_cast<float4*>(out_));
  });
  EXPECT_EQ(p.totals.load_requests, 8u);
  EXPECT_DOUBLE_EQ(p.totals.sectors_per_request(), 16.0);
  EXPECT_DOUBLE_EQ(p.totals.sector_efficiency(), 1.0);
}

TEST_F(EmulatorProfile, AtomicsAndDivergentLanesAreCounted) {
  int* counter = device_buffer<int>(1);
  const KernelProfile a = profile_one([&] { launch_kernel(count_into_one_slot, 2, 64)(counter); });
  EXPECT_EQ(a.totals.atomics, 128u);
  EXPECT_EQ(a.unique_bytes_written, 32u);
  cudaFree(counter);
  const KernelProfile d = profile_one([&] { launch_kernel(even_lanes_copy, 1, 64)(in_, out_); });
  EXPECT_DOUBLE_EQ(d.totals.lanes_per_request(), 16.0);
  EXPECT_DOUBLE_EQ(d.totals.sector_efficiency(), 0.5);  // 16 floats spread over 128 bytes
}

TEST_F(EmulatorProfile, NothingIsCountedWhenProfilingIsOff) {
  emulator::take_profiles();
  launch_kernel(copy_with_stride, 8, 128)(in_, out_, 1);
  ANVIL_CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(emulator::take_profiles().empty());
}

TEST_F(EmulatorProfile, TheTableNamesEachKernelAndItsLines) {
  emulator::set_profiling(true);
  launch_kernel(copy_with_stride, 8, 128)(in_, out_, 2);
  launch_kernel(copy_with_stride, 8, 128)(in_, out_, 2);
  ANVIL_CUDA_CHECK(cudaDeviceSynchronize());
  emulator::set_profiling(false);
  const std::string table = emulator::format_profiles(emulator::take_profiles(), true);
  EXPECT_NE(table.find("copy_with_stride"), std::string::npos) << table;
  EXPECT_NE(table.find("test_profile.cu:20"), std::string::npos) << table;
  EXPECT_NE(table.find("67%"), std::string::npos) << table;  // (4 + 4) / (8 + 4) sectors
}

}  // namespace
}  // namespace anvil::cuda
