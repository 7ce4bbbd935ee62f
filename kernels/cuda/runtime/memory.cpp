// CudaRuntime's runtime: construction, the state of each GPU (caching
// allocator over cudaMalloc, streams, events), host<->device copies, stream
// ordering and synchronization. The kernels live in the other files named in
// cuda_runtime.h.
//
// Streams. A Stream handle's id maps to a cudaStream_t of its device:
//   id 0      the legacy default stream (the handle nullptr), as in PyTorch.
//             Code that names no stream (cuBLAS/cuDNN handles left unset,
//             third-party kernels, cudaMemcpy) runs there too, so it is
//             ordered with anvil's work without any extra care, and a worker
//             thread's copies on id 0 are ordered with the main thread's
//             kernels on id 0 (the legacy stream is per device, not per
//             thread). The legacy stream also waits for "blocking" streams;
//             ours are not blocking (below), so that costs nothing.
//   id 1..32  created by new_stream() with cudaStreamNonBlocking: side
//             streams must not implicitly wait for the default stream, or
//             they could not overlap it. Order between streams is stated
//             explicitly with stream_wait. Like PyTorch's stream pool, the
//             32 streams are created on demand and then handed out round
//             robin: a program that asks for a new stream every step does
//             not leak streams (two handles on one stream only add ordering).
// The current stream is per device and per thread (thread_local), as in
// PyTorch: set_current_stream on one thread does not redirect another
// thread's work. A new thread starts on id 0 for every device.
#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/caching_allocator.h"
#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/cuda/runtime/event_pool.h"
#include "kernels/cuda/index_errors.h"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/runtime/pinned_host_allocator.h"
#include "kernels/cuda/runtime/runtime.h"
#if defined(ANVIL_CUDA_EMULATOR)
#include "kernels/cuda/emulator/checked_allocator.h"
#endif

// Stream id 0 must mean the legacy default stream. Under per-thread default
// streams the handle nullptr would mean another stream for every thread,
// and cross-thread ordering (data loader copies) would silently break.
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "anvil's CUDA backend assumes the legacy default stream; do not build with --default-stream per-thread"
#endif

namespace anvil::cuda {
namespace {

constexpr uint64_t kStreamsPerDevice = 32;

// Makes `device` current without throwing (for paths that run in
// destructors or at exit); restores the previous device on exit.
class QuietDeviceGuard {
 public:
  explicit QuietDeviceGuard(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device) {
      if (cudaSetDevice(device) != cudaSuccess) previous_ = -1;
    } else {
      previous_ = -1;
    }
  }
  ~QuietDeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  QuietDeviceGuard(const QuietDeviceGuard&) = delete;
  QuietDeviceGuard& operator=(const QuietDeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

double gib(size_t bytes) { return static_cast<double>(bytes) / (1ull << 30); }

// Process-wide: host memory belongs to no device. Deliberately never
// destroyed: pinned tensors held by static objects may be freed after any
// destructor of ours has run, and at exit the OS reclaims the pages anyway.
PinnedHostAllocator& pinned() {
  static auto* allocator = new PinnedHostAllocator();
  return *allocator;
}

// Page-locked memory the caller obtained elsewhere (cudaHostAlloc,
// cudaHostRegister): a copy from it may stay asynchronous, its lifetime is
// the caller's business.
bool is_page_locked_elsewhere(const void* ptr) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    cudaGetLastError();  // older drivers report plain host memory as an error
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

// The current stream id of each device, for this thread. Shared by all
// CudaRuntime objects; the registry makes exactly one.
uint64_t& current_stream_id(int device) {
  thread_local std::vector<uint64_t> ids;
  if (ids.size() <= static_cast<size_t>(device)) ids.resize(static_cast<size_t>(device) + 1, 0);
  return ids[static_cast<size_t>(device)];
}

}  // namespace

// --- one GPU ---------------------------------------------------------------

namespace {

// The streams of one GPU.
struct DeviceStreams {
  explicit DeviceStreams(int d) : device(d) {}
  ~DeviceStreams();
  cudaStream_t lookup(uint64_t id) const;
  uint64_t create();

  const int device;
  std::mutex mutex;  // serializes creation
  // [0] is the legacy default stream (nullptr); the rest are created on
  // demand. Atomic: looked up without the lock on every backend call.
  std::array<std::atomic<cudaStream_t>, kStreamsPerDevice + 1> handles{};
  std::atomic<uint64_t> handed_out{0};
};

DeviceStreams::~DeviceStreams() {
  QuietDeviceGuard guard(device);
  for (size_t i = 1; i < handles.size(); ++i) {
    if (cudaStream_t s = handles[i].load()) cudaStreamDestroy(s);
  }
  cudaGetLastError();  // at exit the runtime may be unloading: nothing to report
}

cudaStream_t DeviceStreams::lookup(uint64_t id) const {
  ANVIL_CHECK(id <= kStreamsPerDevice, "cuda: stream id ", id, " on cuda:", device, " does not exist (ids 0..",
              kStreamsPerDevice, "; make streams with new_stream)");
  cudaStream_t s = handles[id].load(std::memory_order_acquire);
  ANVIL_CHECK(id == 0 || s != nullptr, "cuda: stream id ", id, " on cuda:", device, " was not made by new_stream");
  return s;
}

uint64_t DeviceStreams::create() {
  const uint64_t id = 1 + handed_out.fetch_add(1) % kStreamsPerDevice;
  if (handles[id].load(std::memory_order_acquire) != nullptr) return id;
  std::lock_guard<std::mutex> lock(mutex);
  if (handles[id].load(std::memory_order_acquire) == nullptr) {
    DeviceGuard guard(device);
    cudaStream_t s = nullptr;
    ANVIL_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    handles[id].store(s, std::memory_order_release);
  }
  return id;
}

}  // namespace

struct CudaRuntime::DeviceState {
  explicit DeviceState(int d);

  const int device;
  // Members are destroyed in reverse order: the allocator goes first, while
  // the events and streams its destructor still uses exist.
  DeviceStreams streams;
  EventPool events;
  std::unique_ptr<Allocator> allocator;  // a CachingAllocator (checked on the emulated GPU)
};

namespace {

// What the caching allocator needs from one GPU.
class CudaDeviceMemory final : public DeviceMemory {
 public:
  CudaDeviceMemory(int device, DeviceStreams& streams, EventPool& events)
      : device_(device), streams_(streams), events_(events) {}

  void* raw_alloc(size_t nbytes) override {
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, nbytes);
#if defined(ANVIL_CUDA_EMULATOR)
    if (err == cudaSuccess) emulator::note_cached(ptr, nbytes);  // nothing is handed out of a new segment yet
#endif
    if (err == cudaErrorMemoryAllocation) {
      // Out of memory is not sticky: clear it so that it is not reported by
      // the next unrelated check, and let the allocator free its cache and retry.
      cudaGetLastError();
      return nullptr;
    }
    ANVIL_CUDA_CHECK(err);
    return ptr;
  }

  // Never throws: called from destructors and at exit, when the runtime may
  // already be unloading. A real failure here means the context is broken,
  // and the next checked call reports it.
  void raw_free(void* ptr) override {
    QuietDeviceGuard guard(device_);
    cudaError_t err = cudaFree(ptr);
    if (err != cudaSuccess && err != cudaErrorCudartUnloading) {
      std::fprintf(stderr, "anvil: cudaFree(%p) on cuda:%d failed: %s\n", ptr, device_, cudaGetErrorString(err));
    }
    if (err == cudaErrorCudartUnloading) cudaGetLastError();
  }

  // Called from deallocate, which runs in Storage's (noexcept) destructor:
  // must not throw. If the event cannot be recorded, waiting for the whole
  // device is the safe fallback (0 then means "nothing left to wait for").
  uint64_t record_event(uint64_t stream_id) override {
    try {
      DeviceGuard guard(device_);
      cudaEvent_t event = events_.record(streams_.lookup(stream_id));
      return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(event));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "anvil: cuda:%d: could not record a stream event (%s); synchronizing the device instead\n",
                   device_, e.what());
      QuietDeviceGuard guard(device_);
      cudaDeviceSynchronize();
      return 0;
    }
  }

  bool event_done(uint64_t event) override {
    return EventPool::done(reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(event)));
  }

  void release_event(uint64_t event) override {
    events_.release(reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(event)));
  }

  void synchronize() override {
    DeviceGuard guard(device_);
    ANVIL_CUDA_CHECK(cudaDeviceSynchronize());
  }

  std::string describe_memory() override {
    std::ostringstream out;
    out << "Device cuda:" << device_;
    try {
      DeviceGuard guard(device_);
      out << " (" << runtime::device_properties(device_).name << ")";
      size_t free_bytes = 0, total_bytes = 0;
      if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        char line[160];
        std::snprintf(line, sizeof line, " has %.2f GiB free of %.2f GiB total (cudaMemGetInfo", gib(free_bytes),
                      gib(total_bytes));
        out << line << "; memory held by other processes, the CUDA context and libraries counts as used)";
      } else {
        cudaGetLastError();
      }
    } catch (const std::exception&) {
      // Describing is best effort: the out-of-memory error matters more.
    }
    return out.str();
  }

 private:
  int device_;
  DeviceStreams& streams_;
  EventPool& events_;
};

}  // namespace

CudaRuntime::DeviceState::DeviceState(int d) : device(d), streams(d), events(d) {
  // No CUDA call here: the device's context, streams, events and memory are
  // created on first use, so a process that touches only cuda:0 never
  // initializes the other GPUs.
  allocator = std::make_unique<CachingAllocator>(std::make_unique<CudaDeviceMemory>(d, streams, events));
#if defined(ANVIL_CUDA_EMULATOR)
  // memcheck's view of which blocks are handed out (emulator/checked_allocator.h).
  allocator = std::make_unique<emulator::CheckedAllocator>(std::move(allocator),
                                                           [this](uint64_t id) { return streams.lookup(id); });
#endif
}

// --- the backend -----------------------------------------------------------

CudaRuntime::CudaRuntime() {
  const int n = runtime::device_count();
  ANVIL_CHECK(n > 0, "CudaRuntime: no CUDA device is visible (cudaGetDeviceCount found none)");
  devices_.reserve(static_cast<size_t>(n));
  for (int d = 0; d < n; ++d) devices_.push_back(std::make_unique<DeviceState>(d));
}

CudaRuntime::~CudaRuntime() = default;

int CudaRuntime::device_count() const { return static_cast<int>(devices_.size()); }

CudaRuntime::DeviceState& CudaRuntime::state(int device) {
  ANVIL_CHECK(device >= 0 && device < static_cast<int>(devices_.size()), "cuda: device index ", device,
              " is out of range: ", devices_.size(), " GPU(s) visible");
  return *devices_[static_cast<size_t>(device)];
}

cudaStream_t CudaRuntime::stream(int device) { return state(device).streams.lookup(current_stream_id(device)); }

CudaRuntime& cuda_runtime() { return static_cast<CudaRuntime&>(runtime_for(DeviceType::CUDA)); }

cudaStream_t stream(int device) { return cuda_runtime().stream(device); }

cudaStream_t CudaRuntime::stream(const Stream& s) {
  ANVIL_CHECK(s.device.is_cuda(), "cuda: expected a stream of a cuda device, got one of ", s.device);
  return state(s.device.index).streams.lookup(s.id);
}

Allocator& CudaRuntime::allocator(int device_index) { return *state(device_index).allocator; }

Allocator* CudaRuntime::pinned_host_allocator() { return &pinned(); }

namespace {

// After a cudaMemcpyAsync between host memory at `host` and the device:
// return at once when the copy may finish later (the caller asked for that,
// and the host memory is page-locked), otherwise wait for the stream so that
// the host memory may be reused (source) or read (destination) on return.
// Returns whether it waited.
bool finish_host_copy(EventPool& events, const void* host, cudaStream_t stream, bool non_blocking) {
  if (non_blocking) {
    // Ours: the block is kept from reuse until the copy's event completes.
    if (pinned().record_use(host, events, stream)) return false;
    if (is_page_locked_elsewhere(host)) return false;
  }
  ANVIL_CUDA_CHECK(cudaStreamSynchronize(stream));
  return true;
}

}  // namespace

void CudaRuntime::copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) {
  ANVIL_NVTX_RANGE("copy_from_host");
  if (nbytes == 0) return;
  DeviceState& s = state(device_index);
  DeviceGuard guard(device_index);
  cudaStream_t st = stream(device_index);
  ANVIL_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, nbytes, cudaMemcpyHostToDevice, st));
  finish_host_copy(s.events, host_src, st, non_blocking);
}

void CudaRuntime::copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) {
  ANVIL_NVTX_RANGE("copy_to_host");
  if (nbytes == 0) return;
  DeviceState& s = state(device_index);
  DeviceGuard guard(device_index);
  cudaStream_t st = stream(device_index);
  ANVIL_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, nbytes, cudaMemcpyDeviceToHost, st));
  // A synchronising point: a bad index found by a kernel queued before the
  // copy surfaces here rather than at the next indexing call (index_errors.h).
  if (finish_host_copy(s.events, host_dst, st, non_blocking)) raise_pending_index_error(device_index);
}

Stream CudaRuntime::current_stream(int device_index) {
  state(device_index);  // checks the index
  return Stream{Device::cuda(device_index), current_stream_id(device_index)};
}

void CudaRuntime::set_current_stream(const Stream& s) {
  stream(s);  // checks the device and the id
  current_stream_id(s.device.index) = s.id;
}

Stream CudaRuntime::new_stream(int device_index) {
  return Stream{Device::cuda(device_index), state(device_index).streams.create()};
}

void CudaRuntime::synchronize(int device_index) {
  ANVIL_NVTX_RANGE("synchronize");
  state(device_index);
  DeviceGuard guard(device_index);
  ANVIL_CUDA_CHECK(cudaDeviceSynchronize());
  raise_pending_index_error(device_index);  // every kernel has finished: a recorded bad index is final
}

void CudaRuntime::stream_wait(const Stream& waiter, const Stream& producer) {
  ANVIL_NVTX_RANGE("stream_wait");
  cudaStream_t w = stream(waiter);
  cudaStream_t p = stream(producer);
  if (waiter == producer) return;  // a stream is ordered with itself
  EventPool& events = state(producer.device.index).events;
  cudaEvent_t event = nullptr;
  {
    // Recorded on the producer's device: the legacy stream (nullptr) means
    // the current device's, and an event must match its stream's device.
    DeviceGuard guard(producer.device.index);
    event = events.record(p);
  }
  cudaError_t err = cudaSuccess;
  {
    DeviceGuard guard(waiter.device.index);
    err = cudaStreamWaitEvent(w, event, 0);
  }
  // The wait captured the event's current record; re-recording the event
  // later (after it is pooled and handed out again) does not affect it.
  events.release(event);
  ANVIL_CUDA_CHECK(err);
}

}  // namespace anvil::cuda
