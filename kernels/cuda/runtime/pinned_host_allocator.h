#pragma once
// Page-locked ("pinned") host memory, cached. The GPU's copy engines can read
// and write pinned memory directly, so a host<->device copy from it can be
// asynchronous (cudaMemcpyAsync returns at once and the copy overlaps
// whatever the host does next); from pageable memory the driver must stage
// the bytes first and our copies synchronize. cudaHostAlloc/cudaFreeHost are
// slow (they map pages and may synchronize the device), and a data loader
// pins a batch of the same size every step, so freed blocks are kept in
// per-size free lists and handed out again.
//
// Sizes are rounded up to a power of two (at least 4 KiB): batches of
// slightly different sizes (the last batch of an epoch) share a bucket, and
// the waste is bounded by half the block.
//
// A block must not be reused while an asynchronous copy still reads or
// writes it. CudaRuntime's copies call record_use(), which records an event
// on the copy's stream; a freed block goes back to its free list only once
// all its events have completed.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "core/base/allocator.h"
#include "kernels/cuda/runtime/event_pool.h"

namespace anvil::cuda {

class PinnedHostAllocator final : public Allocator {
 public:
  PinnedHostAllocator() = default;
  ~PinnedHostAllocator() override;  // frees every block (at exit; errors ignored)
  PinnedHostAllocator(const PinnedHostAllocator&) = delete;
  PinnedHostAllocator& operator=(const PinnedHostAllocator&) = delete;

  // stream_id is ignored: host memory belongs to no stream; copies say which
  // stream uses it through record_use.
  void* allocate(size_t nbytes, uint64_t stream_id = 0) override;
  void deallocate(void* ptr) override;  // bookkeeping only: no CUDA call, never blocks
  MemoryStats stats() const override;
  void reset_peak_stats() override;
  // Gives the unused cached blocks back (cudaFreeHost). Blocks still awaiting
  // a copy stay until it completes.
  void empty_cache() override;

  // True when ptr points into a block handed out by this allocator and not
  // yet freed.
  bool owns(const void* ptr) const;
  // An asynchronous copy queued on `stream` (a stream of events.device())
  // uses the block that contains ptr: the block will not be reused until the
  // copy has finished. Returns false (and records nothing) when ptr is not
  // in a live block of ours.
  bool record_use(const void* ptr, EventPool& events, cudaStream_t stream);

  static size_t bucket_size(size_t nbytes);

 private:
  struct Use {
    EventPool* pool;
    cudaStream_t stream;
    cudaEvent_t event;
  };
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    bool allocated = false;
    std::vector<Use> uses;  // at most one per stream: the latest copy on it
  };

  Block* find_containing(const void* ptr) const;  // live or not; nullptr when none
  void process_pending();  // blocks whose copies finished -> free lists
  void free_cached_blocks();  // cudaFreeHost every block in the free lists

  mutable std::mutex mutex_;
  std::map<const char*, Block*> blocks_;  // every block we hold, by address
  std::map<size_t, std::vector<Block*>> free_;  // reusable blocks by size
  std::vector<Block*> pending_;  // freed, but copies may still use them
  MemoryStats stats_;
};

}  // namespace anvil::cuda
