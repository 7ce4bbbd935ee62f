#pragma once
// Reusable CUDA events of one device. Creating an event costs a driver call;
// the caching allocators record one per cross-stream free and per pinned
// copy, so they borrow from here and give them back once completed.
// Events are created with cudaEventDisableTiming: we only ever ask "has the
// work before it finished", and timing-free events are cheaper to record
// and to query.
#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

namespace anvil::cuda {

class EventPool {
 public:
  explicit EventPool(int device) : device_(device) {}
  ~EventPool();  // destroys the pooled events (errors ignored: may run at exit)
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  int device() const { return device_; }
  // An unrecorded event of this device (created when the pool is empty).
  cudaEvent_t acquire();
  // Back to the pool. The event's last recorded work need not be done: a
  // later cudaEventRecord simply replaces it.
  void release(cudaEvent_t event);
  // acquire() + cudaEventRecord on `stream` (a stream of this device).
  cudaEvent_t record(cudaStream_t stream);
  // true when the work recorded before the event has finished.
  static bool done(cudaEvent_t event);

 private:
  int device_;
  std::mutex mutex_;
  std::vector<cudaEvent_t> free_;
};

}  // namespace anvil::cuda
