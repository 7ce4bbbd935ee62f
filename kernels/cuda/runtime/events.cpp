// CudaRuntime's events (core/stream.h's Event): one cudaEvent_t each, its
// pointer the handle. Timing events are created only when asked for: events
// without timing are cheaper to record and to wait on.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/cuda/launch/nvtx.h"

namespace anvil::cuda {
namespace {

cudaEvent_t as_event(uint64_t event) {
  ANVIL_CHECK(event != 0, "Event: not an event of the CUDA backend");
  return reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(event));
}

}  // namespace

void* CudaRuntime::native_stream(const Stream& s) { return stream(s); }

uint64_t CudaRuntime::new_event(int device_index, bool timing) {
  ANVIL_CHECK(device_index >= 0 && device_index < device_count(), "Event: device cuda:", device_index,
              " does not exist (", device_count(), " CUDA devices)");
  DeviceGuard guard(device_index);
  cudaEvent_t event = nullptr;
  ANVIL_CUDA_CHECK(cudaEventCreateWithFlags(&event, timing ? cudaEventDefault : cudaEventDisableTiming));
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(event));
}

void CudaRuntime::destroy_event(int device_index, uint64_t event) {
  DeviceGuard guard(device_index);
  cudaEventDestroy(as_event(event));  // deferred by CUDA until recorded work is done; no error to report at teardown
}

void CudaRuntime::record_event(uint64_t event, const Stream& s) {
  cudaStream_t native = stream(s);  // checks the device and the id
  DeviceGuard guard(s.device.index);
  ANVIL_CUDA_CHECK(cudaEventRecord(as_event(event), native));
}

void CudaRuntime::wait_event(const Stream& s, uint64_t event) {
  cudaStream_t native = stream(s);
  DeviceGuard guard(s.device.index);
  ANVIL_CUDA_CHECK(cudaStreamWaitEvent(native, as_event(event), 0));
}

bool CudaRuntime::event_done(int device_index, uint64_t event) {
  DeviceGuard guard(device_index);
  const cudaError_t answer = query_without_residue(cudaEventQuery(as_event(event)));
  if (answer == cudaErrorNotReady) return false;
  ANVIL_CUDA_CHECK(answer);
  return true;
}

void CudaRuntime::synchronize_event(int device_index, uint64_t event) {
  ANVIL_NVTX_RANGE("event synchronize");
  DeviceGuard guard(device_index);
  ANVIL_CUDA_CHECK(cudaEventSynchronize(as_event(event)));
}

double CudaRuntime::event_elapsed_ms(int device_index, uint64_t start, uint64_t end) {
  DeviceGuard guard(device_index);
  float ms = 0;
  const cudaError_t err = cudaEventElapsedTime(&ms, as_event(start), as_event(end));
  ANVIL_CHECK(err == cudaSuccess, "Event::elapsed_ms: ", cudaGetErrorString(err),
              " (both events need enable_timing and must have been recorded and completed)");
  return ms;
}

}  // namespace anvil::cuda
