#pragma once
// The CUDA runtime calls of the NCCL process group, checked: its own error
// macro, device guard and query helper, so that distributed/ needs none of the
// CUDA backend's internals (kernels/cuda/launch/check.h holds the backend's).
// Internal to distributed/process_group/nccl/; compiled only with NCCL.
#include <cuda_runtime_api.h>

#include "core/base/error.h"

// ANVIL_NCCL_CUDA_CHECK(cudaEventRecord(...)) throws anvil::Error naming the
// call, the CUDA error and where it happened.
#define ANVIL_NCCL_CUDA_CHECK(call) \
  do { \
    cudaError_t anvil_nccl_cuda_err_ = (call); \
    if (anvil_nccl_cuda_err_ != cudaSuccess) \
      ::anvil::fail(#call, " failed: ", cudaGetErrorString(anvil_nccl_cuda_err_), " (", \
                    cudaGetErrorName(anvil_nccl_cuda_err_), ") at ", __FILE__, ":", __LINE__); \
  } while (0)

namespace anvil::distributed::nccl_cuda {

// cudaEventQuery and cudaStreamQuery answer cudaErrorNotReady for work still
// running, and the runtime also keeps that answer as the thread's last error,
// where the CUDA backend's next launch check would report it as a failed
// launch. Every query goes through this: it clears that residue (and only it).
inline cudaError_t query_without_residue(cudaError_t answer) {
  if (answer == cudaErrorNotReady && cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
  return answer;
}

// Makes `device` current for the scope and restores the caller's device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    ANVIL_NCCL_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) ANVIL_NCCL_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() {
    int now = -1;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace anvil::distributed::nccl_cuda
