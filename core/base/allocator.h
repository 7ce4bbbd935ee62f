#pragma once
/// @file
/// The allocator interface behind tensor memory, its statistics, and the CPU
/// allocators.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace anvil {

/// An allocator's counters, as torch.cuda.memory_stats reports them.
struct MemoryStats {
  int64_t allocated_bytes = 0;  ///< held by live tensors
  int64_t reserved_bytes = 0;  ///< obtained from the device (allocated + cached)
  int64_t peak_allocated_bytes = 0;  ///< the most allocated_bytes since the last reset_peak_stats()
  int64_t peak_reserved_bytes = 0;  ///< the most reserved_bytes since the last reset_peak_stats()
  int64_t num_allocs = 0;  ///< allocate() calls
  int64_t num_frees = 0;  ///< deallocate() calls
  int64_t cache_hits = 0;  ///< allocate() served without a device malloc
  int64_t device_mallocs = 0;  ///< calls to the device's raw allocator
  int64_t device_frees = 0;  ///< memory given back to the device
  int64_t num_ooms = 0;  ///< device out-of-memory events (before retry)
  int64_t limit_bytes = 0;  ///< set_memory_limit's cap on reserved bytes; 0: none
};

/// Where tensor memory comes from. One per device; the CUDA one caches.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// Memory for `nbytes` to be used on stream `stream_id` (0 = default stream).
  /// Throws anvil::Error when the memory cannot be had.
  virtual void* allocate(size_t nbytes, uint64_t stream_id = 0) = 0;
  virtual void deallocate(void* ptr) = 0;  ///< Returns memory from allocate() (nullptr is ignored).
  virtual MemoryStats stats() const = 0;  ///< The counters, at this moment.
  virtual void reset_peak_stats() {}  ///< Restarts the peaks from the current values.
  virtual void empty_cache() {}  ///< Gives cached memory no tensor holds back to the device.
  /// The block at ptr is also used on another stream: do not hand it out again
  /// until that stream's work, queued so far, has finished.
  virtual void record_stream(void* /*ptr*/, uint64_t /*stream_id*/) {}
  /// A cap on the bytes this allocator holds (reserved), as PyTorch's
  /// set_per_process_memory_fraction: a request that would pass it fails as if
  /// the device were full (cache freed, one retry, then an out-of-memory error
  /// with the stats). 0 removes the cap. It lets a job share a device, and
  /// makes out-of-memory reachable where the device never reports it (host
  /// memory is overcommitted). Returns false where the allocator has no cap.
  virtual bool set_memory_limit(size_t /*bytes*/) { return false; }
  virtual size_t memory_limit() const { return 0; }  ///< The cap set_memory_limit set; 0: none.
};

/// What the caching allocator needs from a device: raw memory and stream events.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* raw_alloc(size_t nbytes) = 0;  ///< nullptr when the device is out of memory
  virtual void raw_free(void* ptr) = 0;  ///< Gives memory from raw_alloc back to the device.
  virtual uint64_t record_event(uint64_t /*stream_id*/) { return 0; }  ///< 0: nothing to wait for
  /// Whether the work an event from record_event waits for has finished.
  virtual bool event_done(uint64_t /*event*/) { return true; }
  virtual void release_event(uint64_t /*event*/) {}  ///< Frees an event from record_event.
  virtual void synchronize() {}  ///< all streams idle; called before giving memory back
  /// One sentence about the device for out-of-memory errors (its name, free and
  /// total memory as the driver sees them); empty when there is nothing to add.
  virtual std::string describe_memory() { return {}; }
};

/// 64-byte aligned host memory with live/peak byte counts; nothing is cached.
std::unique_ptr<Allocator> make_cpu_allocator();

/// The caching allocator (caching_allocator.h) over 64-byte aligned host
/// memory. A training step frees and allocates the same sizes every
/// iteration; served from the cache, its tensors live in pages that are
/// already mapped, where fresh ones from malloc cost a page fault per 4 KiB on
/// first touch (about a tenth of a CNN step on the CPU).
std::unique_ptr<Allocator> make_cpu_caching_allocator();

/// What CPU tensors use: the caching allocator, except in sanitizer builds
/// (AddressSanitizer finds use-after-free only when memory is really freed) or
/// when the environment says ANVIL_CPU_CACHING_ALLOCATOR=0.
std::unique_ptr<Allocator> make_default_cpu_allocator();

}  // namespace anvil
