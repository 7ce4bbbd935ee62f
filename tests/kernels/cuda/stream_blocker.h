#pragma once
// Holds a CUDA stream still until the test says go, so a test can observe
// what was queued behind it (an asynchronous copy returned at once, a block
// was not reused, a wait was ordered) without timing anything.
//
//   StreamBlocker block(stream);   // the stream stops at this point
//   ... queue work, check cudaStreamQuery(stream) == cudaErrorNotReady ...
//   block.release();               // the stream runs on
//
// A host function queued on the stream spins until released. The watchdog
// turns a bug that would wait on the blocked stream (a copy that
// synchronizes when it should not) into a test failure instead of a hang:
// after `limit` it releases the stream and timed_out() says so.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "kernels/cuda/launch/check.h"

namespace anvil::test {

class StreamBlocker {
 public:
  explicit StreamBlocker(cudaStream_t stream, std::chrono::seconds limit = std::chrono::seconds(60)) : stream_(stream) {
    ANVIL_CUDA_CHECK(cudaLaunchHostFunc(stream_, &hold, &go_));
    watchdog_ = std::thread([this, limit] {
      std::unique_lock<std::mutex> lock(mutex_);
      if (!done_cv_.wait_for(lock, limit, [this] { return finished_; })) {
        timed_out_ = true;
        go_.store(true);
      }
    });
  }
  ~StreamBlocker() {
    release();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finished_ = true;
    }
    done_cv_.notify_all();
    watchdog_.join();
    // The host function reads go_: it must be done before we go away.
    cudaStreamSynchronize(stream_);
  }
  StreamBlocker(const StreamBlocker&) = delete;
  StreamBlocker& operator=(const StreamBlocker&) = delete;

  void release() { go_.store(true); }
  bool timed_out() const { return timed_out_.load(); }

 private:
  static void CUDART_CB hold(void* flag) {
    auto* go = static_cast<std::atomic<bool>*>(flag);
    while (!go->load()) std::this_thread::yield();
  }

  cudaStream_t stream_;
  std::atomic<bool> go_{false};
  std::atomic<bool> timed_out_{false};
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool finished_ = false;
  std::thread watchdog_;
};

// The stream has work that has not finished.
inline bool stream_busy(cudaStream_t stream) {
  cudaError_t err = cudaStreamQuery(stream);
  if (err == cudaErrorNotReady) {
    if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
    return true;
  }
  ANVIL_CUDA_CHECK(err);
  return false;
}

}  // namespace anvil::test
