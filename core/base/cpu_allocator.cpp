// Host memory for CPU tensors: 64-byte aligned so that a row of floats starts
// on a cache line and vector loads (AVX-512 included) never split one.
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "core/base/allocator.h"
#include "core/base/error.h"

namespace anvil {
namespace {

constexpr size_t kCpuAlignment = 64;

class CpuAllocator final : public Allocator {
 public:
  ~CpuAllocator() override {
    // Whatever is still live belongs to storages that outlive us (static
    // tensors at exit); freeing it would turn their pointers into dangling ones.
  }

  void* allocate(size_t nbytes, uint64_t /*stream_id*/) override {
    // std::aligned_alloc wants a multiple of the alignment. A zero-size request
    // still gets one line so every allocation has its own non-null address:
    // callers may use the pointer as an identity (e.g. "same storage?").
    ANVIL_CHECK(nbytes <= std::numeric_limits<size_t>::max() - kCpuAlignment,
                "cpu allocator: cannot allocate ", nbytes, " bytes (size too large)");
    size_t rounded = nbytes == 0 ? kCpuAlignment
                                 : (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* ptr = std::aligned_alloc(kCpuAlignment, rounded);
    std::lock_guard<std::mutex> lock(mutex_);
    if (ptr == nullptr) {
      stats_.num_ooms++;
      fail("cpu allocator: out of memory allocating ", nbytes, " bytes (", stats_.allocated_bytes,
           " bytes already allocated, peak ", stats_.peak_allocated_bytes, ")");
    }
    sizes_.emplace(ptr, rounded);
    stats_.num_allocs++;
    stats_.device_mallocs++;
    stats_.allocated_bytes += static_cast<int64_t>(rounded);
    if (stats_.allocated_bytes > stats_.peak_allocated_bytes)
      stats_.peak_allocated_bytes = stats_.allocated_bytes;
    return ptr;
  }

  void deallocate(void* ptr) override {
    if (ptr == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = sizes_.find(ptr);
      ANVIL_CHECK(it != sizes_.end(), "cpu allocator: deallocate of pointer ", ptr,
                  " that this allocator did not hand out (or that was already freed)");
      stats_.allocated_bytes -= static_cast<int64_t>(it->second);
      stats_.num_frees++;
      stats_.device_frees++;
      sizes_.erase(it);
    }
    std::free(ptr);  // outside the lock: free of a large block can be slow
  }

  MemoryStats stats() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    MemoryStats s = stats_;
    // Nothing is cached on the host: what is reserved is what is allocated.
    s.reserved_bytes = s.allocated_bytes;
    s.peak_reserved_bytes = s.peak_allocated_bytes;
    return s;
  }

  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
  }

 private:
  mutable std::mutex mutex_;
  // The size of each live block, so stats stay exact and a bad free is caught
  // with a clear error instead of corrupting the C heap.
  std::unordered_map<void*, size_t> sizes_;
  MemoryStats stats_;
};

}  // namespace

std::unique_ptr<Allocator> make_cpu_allocator() { return std::make_unique<CpuAllocator>(); }

}  // namespace anvil
