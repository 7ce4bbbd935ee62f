// The copy kernel behind the bandwidth baseline: the simplest memory-bound
// kernel there is (one 16-byte load and store per element step, grid-stride),
// so "% of copy bandwidth" compares each op with what a trivial kernel
// reaches on this GPU, not with a datasheet number.
#include <cuda_runtime.h>

#include "bench/cuda/bench_cuda_util.h"
#include "kernels/cuda/launch/launch.cuh"

namespace anvil::bench::cuda {
namespace {

__global__ void copy_float4(float4* __restrict__ dst, const float4* __restrict__ src, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__global__ void copy_bytes(char* dst, const char* src, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

}  // namespace

void launch_copy_kernel(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  int device = 0, sms = 0;
  ANVIL_CUDA_CHECK(cudaGetDevice(&device));
  ANVIL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const size_t vec = bytes / 16;
  anvil::cuda::launch_kernel(copy_float4, sms * 8, 256, 0, stream)(static_cast<float4*>(dst),
                                                                   static_cast<const float4*>(src), vec);
  ANVIL_CUDA_CHECK_LAUNCH("copy_float4");
  if (bytes % 16 != 0) {
    anvil::cuda::launch_kernel(copy_bytes, 1, 32, 0, stream)(static_cast<char*>(dst) + vec * 16,
                                                             static_cast<const char*>(src) + vec * 16, bytes % 16);
    ANVIL_CUDA_CHECK_LAUNCH("copy_bytes");
  }
}

}  // namespace anvil::bench::cuda
