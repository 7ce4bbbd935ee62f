// The CUDA runtime API that anvil calls, implemented for the emulated GPUs:
// the emulated build links this instead of libcudart, so it runs with no
// GPU driver and no CUDA library. Behaviour follows the CUDA documentation
// (synchronous and asynchronous copies, pinned memory, legacy default
// stream, events, sticky launch errors per host thread); device attributes
// are an H100 SXM's.
#include "kernels/cuda/emulator/execution.h"  // first: device_builtins.h defines __shared__ before CUDA's headers

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "kernels/cuda/emulator/device_memory.h"
#include "kernels/cuda/emulator/execution.h"
#include "kernels/cuda/emulator/findings.h"
#include "kernels/cuda/emulator/streams.h"

namespace anvil::emulator {
namespace {

thread_local int t_device = 0;
thread_local cudaError_t t_last_error = cudaSuccess;

cudaError_t fail(cudaError_t e) {
  t_last_error = e;
  return e;
}

bool valid_device(int d) { return d >= 0 && d < config().devices; }

// Page-locked host memory: cudaHostAlloc'd or registered ranges.
struct PinnedRange {
  size_t size;
  bool owned;
};
std::mutex g_pinned_mutex;
std::map<uintptr_t, PinnedRange> g_pinned;

bool is_pinned(const void* p) {
  std::lock_guard<std::mutex> lock(g_pinned_mutex);
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = g_pinned.upper_bound(a);
  if (it == g_pinned.begin()) return false;
  --it;
  return a < it->first + it->second.size;
}

std::mutex g_attr_mutex;
std::map<const void*, int> g_max_dynamic_shared;  // cudaFuncSetAttribute
std::atomic<uint64_t> g_launch_serial{0};

constexpr size_t kStaticSharedLimit = 48 * 1024;
constexpr size_t kOptInSharedLimit = 227 * 1024;

// A copy or memset touching device memory that is not usable when the
// stream reaches it: a memcheck finding, and the next synchronizing call on
// the device returns cudaErrorInvalidValue (the check runs in stream order:
// the caching allocator's notes are stream-ordered too).
bool usable_in_stream_order(const void* p, size_t n, int device, const char* call) {
  std::string detail;
  const char* why = unusable_range(p, n, &detail);
  if (!why) return true;
  if (enabled(Checker::Memcheck)) {
    record(Checker::Memcheck, kUnusableCopy, nullptr, nullptr,
           std::string(call) + " of " + std::to_string(n) + " bytes touches " + why + " (" + detail + ")");
    flush_launch();
  }
  set_pending_error(device, cudaErrorInvalidValue);
  return false;
}

cudaError_t queue_copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream, bool sync) {
  if (n == 0) return cudaSuccess;
  const bool dst_dev = device_of(dst) >= 0, src_dev = device_of(src) >= 0;
  if (kind == cudaMemcpyHostToDevice && (!dst_dev || src_dev)) return fail(cudaErrorInvalidValue);
  if (kind == cudaMemcpyDeviceToHost && (dst_dev || !src_dev)) return fail(cudaErrorInvalidValue);
  if (kind == cudaMemcpyDeviceToDevice && (!dst_dev || !src_dev)) return fail(cudaErrorInvalidValue);
  StreamImpl* s = resolve(stream, t_device);
  const int device = s->device;
  const uint64_t seq = enqueue(s, [dst, src, n, dst_dev, src_dev, device] {
    if (dst_dev && !usable_in_stream_order(dst, n, device, "cudaMemcpy (destination)")) return;
    if (src_dev && !usable_in_stream_order(src, n, device, "cudaMemcpy (source)")) return;
    std::memcpy(dst, src, n);
    if (dst_dev && src_dev)
      copy_state(dst, src, n);
    else if (dst_dev)
      set_state(dst, n, kInitialized);
  });
  // Pageable host memory makes an "async" copy synchronous, as on a GPU:
  // the caller may reuse or read its buffer as soon as the call returns.
  const bool pageable = (!dst_dev && !is_pinned(dst)) || (!src_dev && !is_pinned(src));
  if (sync || pageable) {
    wait_until(s, seq);
    if (sync) {
      if (cudaError_t e = take_pending_error(s->device)) return fail(e);
    }
  }
  return cudaSuccess;
}

cudaError_t queue_memset(void* dst, int value, size_t n, cudaStream_t stream, bool sync) {
  if (n == 0) return cudaSuccess;
  if (device_of(dst) < 0) return fail(cudaErrorInvalidValue);
  StreamImpl* s = resolve(stream, t_device);
  const int device = s->device;
  const uint64_t seq = enqueue(s, [dst, value, n, device] {
    if (!usable_in_stream_order(dst, n, device, "cudaMemset")) return;
    std::memset(dst, value, n);
    set_state(dst, n, kInitialized);
  });
  if (sync) {
    wait_until(s, seq);
    if (cudaError_t e = take_pending_error(s->device)) return fail(e);
  }
  return cudaSuccess;
}

// Where the event was last recorded (stream, sequence number); null: never.
std::pair<StreamImpl*, uint64_t> last_record(cudaEvent_t event) {
  auto* e = reinterpret_cast<EventImpl*>(event);
  std::lock_guard<std::mutex> lock(e->mutex);
  return {e->stream, e->seq};
}

}  // namespace

void submit_kernel(const void* kernel, dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                   std::unique_ptr<KernelBody> body) {
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64 || grid.x == 0 ||
      grid.y == 0 || grid.z == 0 || grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535) {
    fail(cudaErrorInvalidConfiguration);
    return;
  }
  size_t shared_limit = kStaticSharedLimit;
  {
    std::lock_guard<std::mutex> lock(g_attr_mutex);
    auto it = g_max_dynamic_shared.find(kernel);
    if (it != g_max_dynamic_shared.end()) shared_limit = static_cast<size_t>(it->second);
  }
  if (shared_bytes > shared_limit) {
    fail(cudaErrorInvalidValue);
    return;
  }
  StreamImpl* s = resolve(stream, t_device);
  auto launch = std::make_shared<Launch>();
  launch->kernel = kernel;
  launch->grid = grid;
  launch->block = block;
  launch->shared_bytes = shared_bytes;
  launch->device = s->device;
  launch->serial = ++g_launch_serial;
  launch->body = std::move(body);
  enqueue(s, [launch] {
    run_grid(*launch);
    if (flush_launch() > 0) set_pending_error(launch->device, cudaErrorLaunchFailure);
  });
}

// --- emulator.h ---
int device_count() { return config().devices; }
size_t device_memory_bytes() { return config().memory_bytes; }
void note_cached(const void* ptr, size_t nbytes) { set_state(ptr, nbytes, kCached); }
void note_handed_out(const void* ptr, size_t nbytes) {
  poison(const_cast<void*>(ptr), nbytes);
  set_state(ptr, nbytes, kUninitialized);
}
void note_initialized(const void* ptr, size_t nbytes) { set_state(ptr, nbytes, kInitialized); }
void note_handed_out_on(CUstream_st* stream, const void* ptr, size_t nbytes) {
  StreamImpl* s = resolve(stream, device_of(ptr));
  enqueue(s, [ptr, nbytes] { note_handed_out(ptr, nbytes); });
}
void note_cached_after(const std::vector<CUstream_st*>& streams, const void* ptr, size_t nbytes) {
  auto left = std::make_shared<std::atomic<size_t>>(streams.size());
  for (CUstream_st* stream : streams)
    enqueue(resolve(stream, device_of(ptr)), [left, ptr, nbytes] {
      if (left->fetch_sub(1) == 1) note_cached(ptr, nbytes);
    });
}

}  // namespace anvil::emulator

using namespace anvil::emulator;

extern "C" {

// --- errors ---
cudaError_t cudaGetLastError(void) {
  const cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) { return t_last_error; }

const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorNotSupported:
      return "cudaErrorNotSupported";
    default:
      return "cudaErrorUnknown";
  }
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure (anvil emulator: a checker found a bug in a kernel; see its report on "
             "stderr)";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorNotSupported:
      return "operation not supported (by the anvil emulator)";
    default:
      return "unknown error";
  }
}

// --- devices ---
cudaError_t cudaGetDeviceCount(int* count) {
  *count = config().devices;
  return *count > 0 ? cudaSuccess : fail(cudaErrorNoDevice);
}
cudaError_t cudaGetDevice(int* device) {
  *device = t_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
  t_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int device) {
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
  std::memset(p, 0, sizeof *p);
  std::snprintf(p->name, sizeof p->name, "anvil emulated GPU (H100 SXM attributes, sm_90)");
  p->totalGlobalMem = config().memory_bytes;
  p->sharedMemPerBlock = kStaticSharedLimit;
  p->sharedMemPerBlockOptin = kOptInSharedLimit;
  p->sharedMemPerMultiprocessor = 228 * 1024;
  p->regsPerBlock = 65536;
  p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = 1024;
  p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 0x7fffffff;
  p->maxGridSize[1] = 65535;
  p->maxGridSize[2] = 65535;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = 32;
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 132;
  p->l2CacheSize = 50 * 1024 * 1024;
  p->memoryBusWidth = 5120;
  p->totalConstMem = 64 * 1024;
  p->canMapHostMemory = 1;
  p->unifiedAddressing = 1;
  p->concurrentKernels = 1;
  p->asyncEngineCount = 2;
  p->pciDeviceID = device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (!valid_device(device)) return fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      break;
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = static_cast<int>(kStaticSharedLimit);
      break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(kOptInSharedLimit);
      break;
    case cudaDevAttrWarpSize:
      *value = 32;
      break;
    case cudaDevAttrMaxThreadsPerMultiProcessor:
      *value = 2048;
      break;
    case cudaDevAttrMaxGridDimX:
      *value = 0x7fffffff;
      break;
    case cudaDevAttrMaxGridDimY:
    case cudaDevAttrMaxGridDimZ:
      *value = 65535;
      break;
    case cudaDevAttrL2CacheSize:
      *value = 50 * 1024 * 1024;
      break;
    default:
      *value = 0;
      break;
  }
  return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (value < 0 || static_cast<size_t>(value) > kOptInSharedLimit) return fail(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(g_attr_mutex);
  g_max_dynamic_shared[func] = value;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
  synchronize_device(t_device);
  if (cudaError_t e = take_pending_error(t_device)) return fail(e);
  return cudaSuccess;
}

// --- memory ---
cudaError_t cudaMalloc(void** ptr, size_t size) {
  *ptr = device_malloc(t_device, size);
  if (!*ptr) return fail(cudaErrorMemoryAllocation);
  poison(*ptr, size);
  return cudaSuccess;
}
cudaError_t cudaFree(void* ptr) {
  if (!ptr) return cudaSuccess;
  const int d = device_of(ptr);
  if (d < 0) return fail(cudaErrorInvalidValue);
  synchronize_device(d);  // cudaFree synchronizes, as on a GPU
  if (!device_free(ptr)) return fail(cudaErrorInvalidValue);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *total = config().memory_bytes;
  *free_bytes = *total - std::min(*total, device_bytes_in_use(t_device));
  return cudaSuccess;
}

cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int flags) {
  const size_t rounded = (std::max<size_t>(size, 1) + 4095) / 4096 * 4096;
  *ptr = std::aligned_alloc(4096, rounded);
  if (!*ptr) return fail(cudaErrorMemoryAllocation);
  std::lock_guard<std::mutex> lock(g_pinned_mutex);
  g_pinned[reinterpret_cast<uintptr_t>(*ptr)] = PinnedRange{size, true};
  (void)flags;
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** ptr, size_t size) { return cudaHostAlloc(ptr, size, 0); }
cudaError_t cudaFreeHost(void* ptr) {
  if (!ptr) return cudaSuccess;
  {
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    auto it = g_pinned.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == g_pinned.end() || !it->second.owned) return fail(cudaErrorInvalidValue);
    g_pinned.erase(it);
  }
  for (int d = 0; d < config().devices; ++d) synchronize_device(d);  // as cudaFreeHost does
  std::free(ptr);
  return cudaSuccess;
}
cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int) {
  std::lock_guard<std::mutex> lock(g_pinned_mutex);
  g_pinned[reinterpret_cast<uintptr_t>(ptr)] = PinnedRange{size, false};
  return cudaSuccess;
}
cudaError_t cudaHostUnregister(void* ptr) {
  std::lock_guard<std::mutex> lock(g_pinned_mutex);
  return g_pinned.erase(reinterpret_cast<uintptr_t>(ptr)) ? cudaSuccess : fail(cudaErrorInvalidValue);
}
cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host_ptr, unsigned int) {
  if (!is_pinned(host_ptr)) return fail(cudaErrorInvalidValue);
  *device_ptr = host_ptr;  // mapped pinned memory: one address space, as with UVA
  return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* ptr) {
  std::memset(a, 0, sizeof *a);
  const int d = device_of(ptr);
  if (d >= 0) {
    a->type = cudaMemoryTypeDevice;
    a->device = d;
    a->devicePointer = const_cast<void*>(ptr);
  } else if (is_pinned(ptr)) {
    a->type = cudaMemoryTypeHost;
    a->hostPointer = const_cast<void*>(ptr);
    a->devicePointer = const_cast<void*>(ptr);
  } else {
    a->type = cudaMemoryTypeUnregistered;
    a->hostPointer = const_cast<void*>(ptr);
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return queue_copy(dst, src, n, kind, nullptr, true);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream) {
  return queue_copy(dst, src, n, kind, stream, false);
}
cudaError_t cudaMemset(void* dst, int value, size_t n) { return queue_memset(dst, value, n, nullptr, true); }
cudaError_t cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t stream) {
  return queue_memset(dst, value, n, stream, false);
}

// --- streams ---
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  *stream = reinterpret_cast<cudaStream_t>(create_stream(t_device, flags));
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamDefault); }
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (!stream) return fail(cudaErrorInvalidResourceHandle);
  destroy_stream(reinterpret_cast<StreamImpl*>(stream));
  return cudaSuccess;
}
cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int* flags) {
  *flags = resolve(stream, t_device)->flags;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  StreamImpl* s = resolve(stream, t_device);
  synchronize_stream(s);
  if (cudaError_t e = take_pending_error(s->device)) return fail(e);
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  StreamImpl* s = resolve(stream, t_device);
  std::lock_guard<std::mutex> lock(s->mutex);
  // As the CUDA runtime does, "not ready" is also left as the thread's last
  // error (callers clear it: cuda::query_without_residue in check.h).
  return s->completed >= s->enqueued ? cudaSuccess : fail(cudaErrorNotReady);
}
// No stream capture (CUDA graphs) on the emulated GPU: never capturing.
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  resolve(stream, t_device);
  *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* data) {
  enqueue(resolve(stream, t_device), [fn, data] { fn(data); });
  return cudaSuccess;
}

// --- events ---
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  auto* e = new EventImpl();
  e->device = t_device;
  e->flags = flags;
  *event = reinterpret_cast<cudaEvent_t>(e);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (!event) return fail(cudaErrorInvalidResourceHandle);
  // Destroying an event whose work is pending is allowed: CUDA releases it
  // once done. Waiters captured (stream, seq), not the event, so free it now.
  delete reinterpret_cast<EventImpl*>(event);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!event) return fail(cudaErrorInvalidResourceHandle);
  auto* e = reinterpret_cast<EventImpl*>(event);
  StreamImpl* s = resolve(stream, t_device);
  std::lock_guard<std::mutex> lock(e->mutex);
  e->stream = s;
  // The op holds the time stamp, not the event: an event may be destroyed
  // while its record is still queued.
  auto stamp = std::make_shared<std::atomic<double>>(0.0);
  e->recorded_ms = stamp;
  e->seq = enqueue(s, [stamp] { stamp->store(now_ms()); });
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) {
  const auto [s, seq] = last_record(event);
  return !s || reached(s, seq) ? cudaSuccess : fail(cudaErrorNotReady);
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  const auto [s, seq] = last_record(event);
  if (s) wait_until(s, seq);
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  auto* a = reinterpret_cast<EventImpl*>(start);
  auto* b = reinterpret_cast<EventImpl*>(end);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return fail(cudaErrorInvalidResourceHandle);
  if (cudaEventQuery(start) != cudaSuccess || cudaEventQuery(end) != cudaSuccess) return fail(cudaErrorNotReady);
  *ms = static_cast<float>(b->recorded_ms->load() - a->recorded_ms->load());
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int) {
  const auto [producer, seq] = last_record(event);
  if (!producer) return cudaSuccess;  // never recorded: nothing to wait for
  enqueue(resolve(stream, t_device), [producer, seq] { wait_until(producer, seq); });
  return cudaSuccess;
}

}  // extern "C"
