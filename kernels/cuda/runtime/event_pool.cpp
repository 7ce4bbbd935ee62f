#include "kernels/cuda/runtime/event_pool.h"

#include "kernels/cuda/launch/check.h"

namespace anvil::cuda {

EventPool::~EventPool() {
  for (cudaEvent_t e : free_) cudaEventDestroy(e);
  cudaGetLastError();  // at process exit the runtime may already be unloading
}

cudaEvent_t EventPool::acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
  }
  DeviceGuard guard(device_);  // an event belongs to the device current at creation
  cudaEvent_t e = nullptr;
  ANVIL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void EventPool::release(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(event);
}

cudaEvent_t EventPool::record(cudaStream_t stream) {
  cudaEvent_t e = acquire();
  cudaError_t err = cudaEventRecord(e, stream);
  if (err != cudaSuccess) {
    release(e);
    ANVIL_CUDA_CHECK(err);
  }
  return e;
}

bool EventPool::done(cudaEvent_t event) {
  const cudaError_t err = query_without_residue(cudaEventQuery(event));
  if (err == cudaSuccess) return true;
  if (err == cudaErrorNotReady) return false;
  ANVIL_CUDA_CHECK(err);
  return false;
}

}  // namespace anvil::cuda
