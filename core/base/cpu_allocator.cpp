// Host memory for CPU tensors, plain or cached (allocator.h says which is
// used): 64-byte aligned so that a row of floats starts on a cache line and
// vector loads (AVX-512 included) never split one, and blocks of 2 MiB or
// more on transparent huge pages (host_alloc says why).
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <unordered_map>

#include "core/base/allocator.h"
#include "core/base/caching_allocator.h"
#include "core/base/error.h"

namespace anvil {
namespace {

constexpr size_t kCpuAlignment = 64;
constexpr size_t kHugePage = size_t{2} << 20;

bool huge_pages_wanted() {
  static const bool wanted = [] {
    const char* env = std::getenv("ANVIL_CPU_HUGE_PAGES");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return wanted;
}

// The largest request host_alloc takes: its rounding up cannot wrap around.
constexpr size_t kLargestHostRequest = std::numeric_limits<size_t>::max() - kHugePage;

// Whether host_alloc puts a request of nbytes on huge pages.
bool on_huge_pages(size_t nbytes) { return nbytes >= kHugePage && huge_pages_wanted(); }

// nbytes (at most kLargestHostRequest) rounded up to what host_alloc hands out.
size_t host_block_size(size_t nbytes) {
  const size_t align = on_huge_pages(nbytes) ? kHugePage : kCpuAlignment;
  return (std::max<size_t>(nbytes, 1) + align - 1) / align * align;
}

// A block of host_block_size(nbytes) bytes, or nullptr. Blocks of 2 MiB or
// more are 2 MiB aligned and asked onto transparent huge pages (where the
// kernel runs THP in "madvise" mode, as Debian's does, nothing else gets
// them). Memory-bound kernels stream through 64 MB tensors; on 4 KiB pages
// every 4 KiB is a TLB miss and a page walk, which under virtualisation is a
// two-level walk. Kernels that read two or three streams and write one gain
// most; plain reads already run at read bandwidth (kernels/cpu/README.md has
// the figures). ANVIL_CPU_HUGE_PAGES=0 turns it off.
void* host_alloc(size_t nbytes) {
  if (nbytes > kLargestHostRequest) return nullptr;  // more than any address space
  const size_t size = host_block_size(nbytes);
  if (!on_huge_pages(nbytes)) return std::aligned_alloc(kCpuAlignment, size);
  void* ptr = std::aligned_alloc(kHugePage, size);
#ifdef MADV_HUGEPAGE
  // Advice only: where THP is off or unsupported the block stays on small pages.
  if (ptr != nullptr) madvise(ptr, size, MADV_HUGEPAGE);
#endif
  return ptr;
}

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
    ANVIL_CHECK(nbytes <= kLargestHostRequest, "cpu allocator: cannot allocate ", nbytes, " bytes (size too large)");
    const size_t rounded = host_block_size(nbytes);
    {
      // Counted before malloc, so two threads cannot both pass the cap.
      std::lock_guard<std::mutex> lock(mutex_);
      if (stats_.limit_bytes > 0 &&
          static_cast<size_t>(stats_.allocated_bytes) + rounded > static_cast<size_t>(stats_.limit_bytes)) {
        stats_.num_ooms++;  // nothing is cached, so nothing to free before failing
        fail("cpu allocator: out of memory: tried to allocate ", nbytes, " bytes. Memory stats: allocated ",
             stats_.allocated_bytes, " bytes, reserved ", stats_.allocated_bytes, " bytes, peak allocated ",
             stats_.peak_allocated_bytes, " bytes, limit ", stats_.limit_bytes,
             " bytes (set_memory_limit); free tensors or use smaller batches.");
      }
      stats_.allocated_bytes += static_cast<int64_t>(rounded);
    }
    void* ptr = host_alloc(nbytes);
    std::lock_guard<std::mutex> lock(mutex_);
    if (ptr == nullptr) {
      stats_.allocated_bytes -= static_cast<int64_t>(rounded);
      stats_.num_ooms++;
      fail("cpu allocator: out of memory allocating ", nbytes, " bytes (", stats_.allocated_bytes,
           " bytes already allocated, peak ", stats_.peak_allocated_bytes, ")");
    }
    sizes_.emplace(ptr, rounded);
    stats_.num_allocs++;
    stats_.device_mallocs++;
    if (stats_.allocated_bytes > stats_.peak_allocated_bytes) stats_.peak_allocated_bytes = stats_.allocated_bytes;
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

  bool set_memory_limit(size_t bytes) override {
    ANVIL_CHECK(bytes <= static_cast<size_t>(std::numeric_limits<int64_t>::max()), "set_memory_limit: ", bytes,
                " bytes is more than the host holds");
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.limit_bytes = static_cast<int64_t>(bytes);
    return true;
  }
  size_t memory_limit() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<size_t>(stats_.limit_bytes);
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

// Raw host memory for the caching allocator. Its segment sizes are multiples
// of its 512-byte minimum block, so every block it carves out stays 64-byte aligned.
class HostMemory final : public DeviceMemory {
 public:
  void* raw_alloc(size_t nbytes) override { return host_alloc(nbytes); }
  void raw_free(void* ptr) override { std::free(ptr); }
};

bool sanitizer_build() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace

std::unique_ptr<Allocator> make_cpu_allocator() { return std::make_unique<CpuAllocator>(); }

std::unique_ptr<Allocator> make_cpu_caching_allocator() {
  return std::make_unique<CachingAllocator>(std::make_unique<HostMemory>());
}

std::unique_ptr<Allocator> make_default_cpu_allocator() {
  const char* env = std::getenv("ANVIL_CPU_CACHING_ALLOCATOR");
  const bool disabled = env != nullptr && std::strcmp(env, "0") == 0;
  if (disabled || sanitizer_build()) return make_cpu_allocator();
  return make_cpu_caching_allocator();
}

}  // namespace anvil
