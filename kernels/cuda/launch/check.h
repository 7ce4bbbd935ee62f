#pragma once
// Error checking for CUDA runtime calls and kernel launches, and a guard that
// makes a device current for the scope of a backend call. Host-side only.
#include <cuda_runtime_api.h>

#include "core/base/error.h"

// ANVIL_CUDA_CHECK(cudaMemcpyAsync(...)) throws anvil::Error naming the call,
// the CUDA error and where it happened.
#define ANVIL_CUDA_CHECK(call) \
  do { \
    cudaError_t anvil_cuda_err_ = (call); \
    if (anvil_cuda_err_ != cudaSuccess) { \
      ::anvil::fail(#call, " failed: ", cudaGetErrorString(anvil_cuda_err_), " (", cudaGetErrorName(anvil_cuda_err_), \
                    ") at ", __FILE__, ":", __LINE__); \
    } \
  } while (0)

// After every launch_kernel(...)(...) (kernels/cuda/launch/launch.cuh): a bad
// configuration (too many threads, too much shared memory) is reported here,
// not at some later unrelated call.
#define ANVIL_CUDA_CHECK_LAUNCH(kernel_name) \
  do { \
    cudaError_t anvil_cuda_err_ = cudaGetLastError(); \
    if (anvil_cuda_err_ != cudaSuccess) { \
      ::anvil::fail("CUDA kernel launch ", kernel_name, " failed: ", cudaGetErrorString(anvil_cuda_err_), " at ", \
                    __FILE__, ":", __LINE__); \
    } \
  } while (0)

namespace anvil::cuda {

// cudaEventQuery and cudaStreamQuery answer cudaErrorNotReady for work still
// running, and the runtime also keeps that answer as the thread's last
// error, where the next ANVIL_CUDA_CHECK_LAUNCH would report it as a failed
// launch. Wrap every query: it clears that residue (and only it: any other
// pending error stays for its rightful reporter).
//   if (query_without_residue(cudaEventQuery(e)) == cudaErrorNotReady) ...
inline cudaError_t query_without_residue(cudaError_t answer) {
  if (answer == cudaErrorNotReady && cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
  return answer;
}

// Makes `device` current and restores the previous device on exit, so a
// backend call on cuda:1 does not leave the caller's thread on cuda:1.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    ANVIL_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) ANVIL_CUDA_CHECK(cudaSetDevice(device));
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

}  // namespace anvil::cuda
