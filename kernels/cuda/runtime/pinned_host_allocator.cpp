#include "kernels/cuda/runtime/pinned_host_allocator.h"

#include <algorithm>
#include <sstream>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"

namespace anvil::cuda {
namespace {

constexpr size_t kMinBlock = size_t{4} << 10;  // 4 KiB: a page

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }

}  // namespace

size_t PinnedHostAllocator::bucket_size(size_t nbytes) {
  size_t size = kMinBlock;
  while (size < nbytes) {
    ANVIL_CHECK(size <= (~size_t{0} >> 1), "pin_memory: cannot allocate ", nbytes,
                " bytes of pinned host memory: larger than any host holds");
    size <<= 1;
  }
  return size;
}

PinnedHostAllocator::~PinnedHostAllocator() {
  // May run during static destruction, after the CUDA runtime began to shut
  // down: every error is ignored, there is nobody left to report it to.
  for (auto& [address, block] : blocks_) {
    for (const Use& u : block->uses) u.pool->release(u.event);
    cudaFreeHost(block->ptr);
    delete block;
  }
  cudaGetLastError();
}

PinnedHostAllocator::Block* PinnedHostAllocator::find_containing(const void* ptr) const {
  const char* p = static_cast<const char*>(ptr);
  auto it = blocks_.upper_bound(p);  // first block starting after p
  if (it == blocks_.begin()) return nullptr;
  --it;
  Block* b = it->second;
  return p < b->ptr + b->size ? b : nullptr;
}

void PinnedHostAllocator::process_pending() {
  auto ready = [](Block* b) {
    auto finished = [](const Use& u) {
      if (!EventPool::done(u.event)) return false;
      u.pool->release(u.event);
      return true;
    };
    b->uses.erase(std::remove_if(b->uses.begin(), b->uses.end(), finished), b->uses.end());
    return b->uses.empty();
  };
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (ready(*it)) {
      free_[(*it)->size].push_back(*it);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

void PinnedHostAllocator::free_cached_blocks() {
  for (auto& [size, list] : free_) {
    for (Block* b : list) {
      ANVIL_CUDA_CHECK(cudaFreeHost(b->ptr));
      blocks_.erase(b->ptr);
      stats_.device_frees++;
      stats_.reserved_bytes -= static_cast<int64_t>(b->size);
      delete b;
    }
  }
  free_.clear();
}

void* PinnedHostAllocator::allocate(size_t nbytes, uint64_t /*stream_id*/) {
  const size_t size = bucket_size(nbytes);
  std::unique_lock<std::mutex> lock(mutex_);
  process_pending();
  stats_.num_allocs++;
  Block* block = nullptr;
  if (auto it = free_.find(size); it != free_.end() && !it->second.empty()) {
    block = it->second.back();
    it->second.pop_back();
    stats_.cache_hits++;
  } else {
    // cudaHostAlloc is slow (milliseconds for large blocks): let other
    // threads allocate and free meanwhile. Portable: a block may be copied
    // to or from any GPU, not only the one current here.
    void* p = nullptr;
    lock.unlock();
    cudaError_t err = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    lock.lock();
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // not sticky: clear it, then retry without our cache
      stats_.num_ooms++;
      free_cached_blocks();
      err = cudaHostAlloc(&p, size, cudaHostAllocPortable);
      if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        std::ostringstream msg;
        msg << "pin_memory: out of pinned host memory: cudaHostAlloc of " << size << " bytes (for a " << nbytes
            << "-byte request) failed even after freeing the cache. Pinned memory: " << stats_.allocated_bytes
            << " bytes (" << mib(stats_.allocated_bytes) << " MiB) in use, " << stats_.reserved_bytes
            << " bytes reserved, peak " << stats_.peak_allocated_bytes
            << " bytes. Page-locked memory is limited by the OS "
            << "(ulimit -l, container limits): pin fewer or smaller batches (fewer loader "
            << "workers or a smaller prefetch_factor), or turn pin_memory off.";
        throw Error(msg.str());
      }
    }
    ANVIL_CUDA_CHECK(err);
    block = new Block;
    block->ptr = static_cast<char*>(p);
    block->size = size;
    blocks_.emplace(block->ptr, block);
    stats_.device_mallocs++;
    stats_.reserved_bytes += static_cast<int64_t>(size);
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  }
  block->allocated = true;
  stats_.allocated_bytes += static_cast<int64_t>(block->size);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return block->ptr;
}

void PinnedHostAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.find(static_cast<const char*>(ptr));
  ANVIL_CHECK(it != blocks_.end() && it->second->allocated, "PinnedHostAllocator: deallocate of ", ptr,
              ", which this allocator did not hand out or which was already freed");
  Block* block = it->second;
  block->allocated = false;
  stats_.num_frees++;
  stats_.allocated_bytes -= static_cast<int64_t>(block->size);
  // Copies queued from or into the block may still be running; whether they
  // finished is asked at the next allocate, not here (no CUDA call on free).
  if (block->uses.empty())
    free_[block->size].push_back(block);
  else
    pending_.push_back(block);
}

bool PinnedHostAllocator::owns(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Block* b = find_containing(ptr);
  return b != nullptr && b->allocated;
}

bool PinnedHostAllocator::record_use(const void* ptr, EventPool& events, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  Block* b = find_containing(ptr);
  if (b == nullptr || !b->allocated) return false;
  cudaEvent_t event = events.record(stream);
  // Work on one stream completes in order, so the newest event of a stream
  // covers all earlier ones: keep one per stream, the list stays short.
  for (Use& u : b->uses) {
    if (u.pool == &events && u.stream == stream) {
      u.pool->release(u.event);
      u.event = event;
      return true;
    }
  }
  b->uses.push_back({&events, stream, event});
  return true;
}

MemoryStats PinnedHostAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void PinnedHostAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

void PinnedHostAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  process_pending();
  free_cached_blocks();
}

}  // namespace anvil::cuda
