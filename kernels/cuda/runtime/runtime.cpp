#include "kernels/cuda/runtime/runtime.h"

#include <cuda_runtime_api.h>

#include "core/base/error.h"

namespace anvil::cuda::runtime {

int device_count() {
  int n = 0;
  // No driver or no device is not an error for us: it means "no GPU".
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error state
    return 0;
  }
  return n;
}

DeviceProperties device_properties(int index) {
  cudaDeviceProp p{};
  cudaError_t err = cudaGetDeviceProperties(&p, index);
  ANVIL_CHECK(err == cudaSuccess, "cuda::device_properties(", index, "): ", cudaGetErrorString(err));
  return {p.name, p.major, p.minor, p.totalGlobalMem, p.multiProcessorCount};
}

}  // namespace anvil::cuda::runtime
