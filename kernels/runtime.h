#pragma once
// The device Runtime: what a device is — memory, copies, streams, events,
// synchronisation — one implementation per device type (kernels/cpu,
// kernels/cuda). Compute is not here: every op runs through the kernel
// registry (kernels/kernel_registry.h), where each backend registers its
// kernels in their own files, so adding an op never edits this interface.
#include <cstdint>

#include "core/base/allocator.h"
#include "core/base/device.h"
#include "kernels/view.h"

namespace anvil {

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual DeviceType type() const = 0;
  virtual int device_count() const = 0;

  // --- memory ---
  // The caching allocator of one device's memory.
  virtual Allocator& allocator(int device_index) = 0;
  // Page-locked host memory for fast, asynchronous host<->device copies (the
  // data loader's pin_memory). Null when the device has none (the CPU).
  virtual Allocator* pinned_host_allocator() { return nullptr; }

  // --- copies ---
  // Same device, any strides, casting to dst's dtype.
  virtual void copy(const View& dst, const View& src) = 0;
  // Host memory to device memory; non_blocking queues it on the current stream.
  virtual void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) = 0;
  // Device memory to host memory; non_blocking queues it on the current stream.
  virtual void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) = 0;

  // --- streams ---
  // The stream ops on device_index are queued on now.
  virtual Stream current_stream(int device_index) = 0;
  // Makes `stream` the current one of its device.
  virtual void set_current_stream(const Stream& stream) = 0;
  // A new stream on device_index.
  virtual Stream new_stream(int device_index) = 0;
  // Blocks the host until all work queued on device_index has finished.
  virtual void synchronize(int device_index) = 0;
  // Makes `waiter` wait for all work queued so far on `producer`.
  virtual void stream_wait(const Stream& waiter, const Stream& producer) = 0;
  // The device's own handle of a stream (a cudaStream_t on CUDA, null on the
  // CPU), for libraries that queue work themselves (NCCL).
  virtual void* native_stream(const Stream& stream) = 0;

  // --- events: markers in a stream's work (core/stream.h's Event); handles
  //     are the runtime's own, 0 is never one ---
  // A new event; `timing` events can be asked for the time between two.
  virtual uint64_t new_event(int device_index, bool timing) = 0;
  // Releases an event.
  virtual void destroy_event(int device_index, uint64_t event) = 0;
  // Marks the point in `stream`'s work the event stands for.
  virtual void record_event(uint64_t event, const Stream& stream) = 0;
  // `stream` waits, on the device, for the work recorded before the event.
  virtual void wait_event(const Stream& stream, uint64_t event) = 0;
  // Whether the work recorded before the event has finished.
  virtual bool event_done(int device_index, uint64_t event) = 0;
  // Blocks the host until the work recorded before the event has finished.
  virtual void synchronize_event(int device_index, uint64_t event) = 0;
  // Milliseconds between two recorded timing events.
  virtual double event_elapsed_ms(int device_index, uint64_t start, uint64_t end) = 0;
};

// The runtime of a device type. The CPU's always exists; the CUDA one is
// created on first use when a GPU is present (kernels/runtime.cpp).
Runtime& runtime_for(DeviceType type);
inline Runtime& runtime_for(const Device& d) { return runtime_for(d.type); }
bool has_runtime(DeviceType type);

}  // namespace anvil
