#pragma once
// The CUDA device Runtime: one object serves every GPU (memory.cpp: the
// caching allocator on cudaMalloc, pinned host memory, host<->device copies,
// streams; events.cpp; copy.cu: strided casting copies). Nothing here blocks
// the host except synchronize(), copies to pageable host memory and event
// waits.
//
// The CUDA kernels are not methods of it: each registers itself from its own
// file (kernels/kernel_registry.h) — the hand-written ones in this folder,
// the library-backed ones in ../cublas, ../cudnn and ../cusolver. A kernel
// makes its views' device current (DeviceGuard), opens an NVTX range named
// after the op and queues its work on stream(device), the device's current
// stream.
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "core/base/scalar.h"
#include "kernels/runtime.h"

namespace anvil::cuda {

class CudaRuntime final : public Runtime {
 public:
  CudaRuntime();
  ~CudaRuntime() override;

  DeviceType type() const override { return DeviceType::CUDA; }
  int device_count() const override;

  // The stream ops on `device` are queued on now (set_current_stream changes it).
  cudaStream_t stream(int device);
  // A CUDA stream for a Stream handle of this backend.
  cudaStream_t stream(const Stream& s);

  // --- memory.cpp ---
  Allocator& allocator(int device_index) override;
  Allocator* pinned_host_allocator() override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) override;
  Stream current_stream(int device_index) override;
  void set_current_stream(const Stream& stream) override;
  Stream new_stream(int device_index) override;
  void synchronize(int device_index) override;
  void stream_wait(const Stream& waiter, const Stream& producer) override;
  void* native_stream(const Stream& stream) override;
  uint64_t new_event(int device_index, bool timing) override;
  void destroy_event(int device_index, uint64_t event) override;
  void record_event(uint64_t event, const Stream& stream) override;
  void wait_event(const Stream& stream, uint64_t event) override;
  bool event_done(int device_index, uint64_t event) override;
  void synchronize_event(int device_index, uint64_t event) override;
  double event_elapsed_ms(int device_index, uint64_t start, uint64_t end) override;

  // --- copy.cu ---
  void copy(const View& dst, const View& src) override;

 private:
  struct DeviceState;  // memory.cpp: allocator, streams, events of one GPU
  DeviceState& state(int device);
  std::vector<std::unique_ptr<DeviceState>> devices_;
};

// The CUDA runtime (there is one only when a GPU is present: a CUDA kernel
// runs only for CUDA tensors, which exist only then).
CudaRuntime& cuda_runtime();
// The current stream of `device`, which a kernel queues its work on.
cudaStream_t stream(int device);
// out = value on out's device (copy.cu; also the Fill kernel), for kernels
// that clear or initialise an operand.
void fill(const View& out, const Scalar& value);

}  // namespace anvil::cuda
