#pragma once
// Internal to the emulator: asynchronous streams and events. Each stream
// has its own worker thread that runs its operations (kernels, copies,
// memsets, host functions, waits on events) in order, so work on different
// streams really overlaps and a missing stream_wait or record_stream becomes
// a real race. Each device has a legacy default stream (the handle nullptr),
// which waits for, and is waited for by, the device's blocking streams.
#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

namespace anvil::emulator {

struct StreamImpl {
  int device = 0;
  bool legacy = false;  // the device's default stream (handle nullptr)
  bool blocking = false;  // created without cudaStreamNonBlocking: ordered with the legacy stream
  unsigned flags = 0;

  std::mutex mutex;
  std::condition_variable work_ready, work_done;
  std::deque<std::function<void()>> queue;
  uint64_t enqueued = 0, completed = 0;
  bool stopping = false;
  std::thread worker;
};

struct EventImpl {
  int device = 0;
  unsigned flags = 0;
  std::mutex mutex;
  StreamImpl* stream = nullptr;  // where it was last recorded (null: never)
  uint64_t seq = 0;  // done when stream->completed >= seq
  std::shared_ptr<std::atomic<double>> recorded_ms;  // when the worker reached it (cudaEventElapsedTime)
};

StreamImpl* resolve(cudaStream_t s, int current_device);  // nullptr -> the device's legacy stream
StreamImpl* create_stream(int device, unsigned flags);
void destroy_stream(StreamImpl* s);  // waits for its work first

// Queues `op` (with the legacy-stream ordering) and returns its sequence number.
uint64_t enqueue(StreamImpl* s, std::function<void()> op);
void wait_until(StreamImpl* s, uint64_t seq);  // host side, or inside another stream's op
bool reached(StreamImpl* s, uint64_t seq);
void synchronize_stream(StreamImpl* s);
void synchronize_device(int device);

// A kernel with checker findings makes the next synchronizing call on its
// device return an error (once), as an asynchronous GPU fault would.
void set_pending_error(int device, cudaError_t e);
cudaError_t take_pending_error(int device);

double now_ms();

}  // namespace anvil::emulator
