// Streams and events of the emulated GPUs (streams.h).
#include "kernels/cuda/emulator/streams.h"

#include <array>
#include <atomic>
#include <chrono>
#include <vector>

#include "kernels/cuda/emulator/findings.h"

namespace anvil::emulator {
namespace {

constexpr int kMaxDevices = 8;

struct Registry {
  std::mutex mutex;
  std::array<StreamImpl*, kMaxDevices> legacy{};
  std::array<std::vector<StreamImpl*>, kMaxDevices> streams;  // every live stream, legacy included
  std::array<std::atomic<int>, kMaxDevices> pending{};
};

Registry& registry() {
  static auto* r = new Registry();  // never destroyed: workers may still run at exit
  return *r;
}

void worker_loop(StreamImpl* s) {
  for (;;) {
    std::function<void()> op;
    {
      std::unique_lock<std::mutex> lock(s->mutex);
      s->work_ready.wait(lock, [s] { return s->stopping || !s->queue.empty(); });
      if (s->queue.empty()) return;
      op = std::move(s->queue.front());
      s->queue.pop_front();
    }
    op();
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      ++s->completed;
    }
    s->work_done.notify_all();
  }
}

StreamImpl* start(int device, unsigned flags, bool legacy) {
  auto* s = new StreamImpl();
  s->device = device;
  s->flags = flags;
  s->legacy = legacy;
  s->blocking = !legacy && !(flags & cudaStreamNonBlocking);
  s->worker = std::thread(worker_loop, s);
  s->worker.detach();  // a stream's worker lives as long as the stream; the legacy ones, the process
  return s;
}

}  // namespace

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

StreamImpl* resolve(cudaStream_t s, int current_device) {
  if (s != nullptr && s != cudaStreamLegacy && s != cudaStreamPerThread) return reinterpret_cast<StreamImpl*>(s);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  StreamImpl*& legacy = r.legacy[static_cast<size_t>(current_device)];
  if (!legacy) {
    legacy = start(current_device, 0, true);
    r.streams[static_cast<size_t>(current_device)].push_back(legacy);
  }
  return legacy;
}

StreamImpl* create_stream(int device, unsigned flags) {
  StreamImpl* s = start(device, flags, false);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.streams[static_cast<size_t>(device)].push_back(s);
  return s;
}

void destroy_stream(StreamImpl* s) {
  synchronize_stream(s);
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto& v = r.streams[static_cast<size_t>(s->device)];
    std::erase(v, s);
  }
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->stopping = true;
  }
  s->work_ready.notify_all();
  // The worker exits on its own; the object is leaked on purpose (a few hundred
  // bytes per destroyed stream) so that a late waiter never touches freed memory.
}

uint64_t enqueue(StreamImpl* s, std::function<void()> op) {
  // Legacy default-stream semantics: work on the legacy stream waits for all
  // blocking streams of its device, and work on a blocking stream waits for
  // the legacy stream.
  std::vector<std::pair<StreamImpl*, uint64_t>> after;
  if (s->legacy || s->blocking) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (StreamImpl* o : r.streams[static_cast<size_t>(s->device)]) {
      if (o == s || !(s->legacy ? o->blocking : o->legacy)) continue;
      std::lock_guard<std::mutex> l2(o->mutex);
      if (o->enqueued > o->completed) after.emplace_back(o, o->enqueued);
    }
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  if (after.empty()) {
    s->queue.push_back(std::move(op));
  } else {
    s->queue.push_back([after = std::move(after), op = std::move(op)] {
      for (auto [o, seq] : after) wait_until(o, seq);
      op();
    });
  }
  const uint64_t seq = ++s->enqueued;
  s->work_ready.notify_one();
  return seq;
}

void wait_until(StreamImpl* s, uint64_t seq) {
  std::unique_lock<std::mutex> lock(s->mutex);
  s->work_done.wait(lock, [&] { return s->completed >= seq; });
}

bool reached(StreamImpl* s, uint64_t seq) {
  std::lock_guard<std::mutex> lock(s->mutex);
  return s->completed >= seq;
}

void synchronize_stream(StreamImpl* s) {
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    target = s->enqueued;
  }
  wait_until(s, target);
}

void synchronize_device(int device) {
  std::vector<StreamImpl*> all;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    all = r.streams[static_cast<size_t>(device)];
  }
  for (StreamImpl* s : all) synchronize_stream(s);
}

void set_pending_error(int device, cudaError_t e) {
  int expected = cudaSuccess;
  registry().pending[static_cast<size_t>(device)].compare_exchange_strong(expected, e);
}

cudaError_t take_pending_error(int device) {
  return static_cast<cudaError_t>(registry().pending[static_cast<size_t>(device)].exchange(cudaSuccess));
}

}  // namespace anvil::emulator
