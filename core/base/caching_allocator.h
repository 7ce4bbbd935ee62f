#pragma once
// A caching allocator for device memory, after PyTorch's CUDA caching
// allocator, simplified. Device-neutral: it only needs a DeviceMemory (raw
// alloc/free and stream events), so all of its logic is tested on the CPU.
//
// Why cache at all: cudaMalloc/cudaFree are slow and cudaFree synchronizes the
// device. A training step allocates and frees the same sizes every iteration,
// so after the first step every request is served from memory we already hold.
//
// Vocabulary:
//   segment  one piece of memory obtained from the device with raw_alloc. It is
//            only given back whole, and only when nothing in it is in use.
//   block    a contiguous part of a segment, either handed out or free. A
//            segment starts as one block; allocation splits a block, freeing
//            merges ("coalesces") a block with its free neighbours again.
//   pool     the free blocks, searched best-fit. Small requests (<= 1 MiB) and
//            large ones live in separate pools with separate segments, so
//            short-lived small tensors cannot fragment the big segments.
//   stream   a block is tied to the stream it was allocated for and is only
//            reused for that stream: work queued on one stream runs in order,
//            so a later kernel on the same stream cannot overtake the kernels
//            that still read the freed block. Another stream could.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/base/allocator.h"

namespace anvil {

// The thresholds, PyTorch's values by default. Tests shrink them to exercise
// splitting and segment reuse with little memory.
struct CachingAllocatorOptions {
  // Every block size is a multiple of this, so every block stays aligned to it
  // (device allocations are at least 256-byte aligned) and tiny requests do not
  // leave slivers that nothing can use.
  size_t min_block_size = 512;
  // Requests up to this size are "small" and come from the small pool.
  size_t small_request_limit = size_t{1} << 20;  // 1 MiB
  // Small requests share segments of this size: one device malloc serves many.
  size_t small_segment_size = size_t{2} << 20;  // 2 MiB
  // Large requests below this size get a shared segment of medium_segment_size
  // (or one of exactly their size where the device has no room for that);
  // larger ones get a segment of exactly their (rounded) size.
  size_t medium_request_limit = size_t{10} << 20;  // 10 MiB
  size_t medium_segment_size = size_t{20} << 20;  // 20 MiB
  // A large block is split only when the rest is larger than this: a smaller
  // rest could only serve small requests, which never look in the large pool.
  size_t large_split_remainder = size_t{1} << 20;  // 1 MiB
};

class CachingAllocator : public Allocator {
 public:
  explicit CachingAllocator(std::unique_ptr<DeviceMemory> device, CachingAllocatorOptions options = {});
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A zero-byte request gets a minimum-size block, so it too has a unique
  // non-null address.
  void* allocate(size_t nbytes, uint64_t stream_id = 0) override;
  void deallocate(void* ptr) override;  // nullptr: no-op; unknown pointer: anvil::Error
  MemoryStats stats() const override;
  void reset_peak_stats() override;
  // Waits for all streams, then gives every segment with nothing in use back
  // to the device.
  void empty_cache() override;
  void record_stream(void* ptr, uint64_t stream_id) override;
  // Segments are not taken from the device past `bytes` reserved; lowering it
  // below what is reserved now frees nothing by itself (empty_cache does).
  bool set_memory_limit(size_t bytes) override;
  size_t memory_limit() const override;

  // The size of the block a request of nbytes gets (before any rest is kept).
  size_t round_size(size_t nbytes) const;
  const CachingAllocatorOptions& options() const { return options_; }

 private:
  enum class BlockState { Allocated, AwaitingEvents, Free };

  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    uint64_t stream = 0;  // the stream it was allocated for
    bool small_pool = false;  // which pool (and kind of segment) it belongs to
    BlockState state = BlockState::Free;
    // Neighbours in the same segment, in address order; nullptr at the ends.
    // A block with neither is a whole, unsplit segment.
    Block* prev = nullptr;
    Block* next = nullptr;
    std::set<uint64_t> other_streams;  // from record_stream, besides `stream`
    int pending_events = 0;  // events that must complete before reuse
  };

  // Free blocks ordered by (stream, size, address): the first block not less
  // than {stream, size, 0} is the smallest one that fits on that stream.
  struct BlockOrder {
    bool operator()(const Block* a, const Block* b) const;
  };
  using FreeList = std::set<Block*, BlockOrder>;

  struct PendingEvent {
    uint64_t event;
    Block* block;
  };

  FreeList& pool_for(bool small_pool) { return small_pool ? small_free_ : large_free_; }
  size_t segment_size_for(size_t block_size) const;
  Block* find_free_block(size_t size, uint64_t stream, bool small_pool);
  Block* allocate_segment(size_t size, uint64_t stream, bool small_pool);
  void split_if_worthwhile(Block* block, size_t size);
  void free_block(Block* block);
  void merge_into(Block* block, Block* neighbour);
  void process_completed_events();
  void synchronize_and_drain_events();
  void release_unused_segments();
  [[noreturn]] void throw_out_of_memory(size_t nbytes, size_t size, uint64_t stream);

  std::unique_ptr<DeviceMemory> device_;
  CachingAllocatorOptions options_;
  mutable std::mutex mutex_;  // guards everything below
  FreeList small_free_;
  FreeList large_free_;
  std::unordered_map<void*, Block*> allocated_;  // handed out, by address
  std::vector<PendingEvent> pending_;  // freed blocks waiting on other streams
  MemoryStats stats_;
};

}  // namespace anvil
