#include "core/base/caching_allocator.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

#include "core/base/error.h"

namespace anvil {
namespace {

std::string format_bytes(int64_t bytes) {
  char mib[32];
  std::snprintf(mib, sizeof mib, "%.2f", static_cast<double>(bytes) / (1 << 20));
  return std::to_string(bytes) + " bytes (" + mib + " MiB)";
}

bool is_power_of_two(size_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace

bool CachingAllocator::BlockOrder::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return a->stream < b->stream;
  if (a->size != b->size) return a->size < b->size;
  return std::less<const char*>()(a->ptr, b->ptr);
}

CachingAllocator::CachingAllocator(std::unique_ptr<DeviceMemory> device, CachingAllocatorOptions options)
    : device_(std::move(device)), options_(options) {
  const auto& o = options_;
  ANVIL_CHECK(device_ != nullptr, "CachingAllocator: needs a DeviceMemory, got nullptr");
  ANVIL_CHECK(is_power_of_two(o.min_block_size), "CachingAllocator: min_block_size must be a power of two, got ",
              o.min_block_size);
  // Segments must hold the largest request routed to them, and be made of
  // whole blocks so splitting never leaves an odd-sized tail.
  ANVIL_CHECK(o.small_request_limit % o.min_block_size == 0 && o.small_segment_size % o.min_block_size == 0 &&
                  o.medium_segment_size % o.min_block_size == 0,
              "CachingAllocator: small_request_limit, small_segment_size and medium_segment_size "
              "must be multiples of min_block_size (",
              o.min_block_size, ")");
  ANVIL_CHECK(o.small_segment_size >= o.small_request_limit, "CachingAllocator: small_segment_size (",
              o.small_segment_size, ") must hold a request of small_request_limit (", o.small_request_limit, ") bytes");
  ANVIL_CHECK(o.medium_segment_size >= o.medium_request_limit, "CachingAllocator: medium_segment_size (",
              o.medium_segment_size, ") must hold a request just below medium_request_limit (", o.medium_request_limit,
              ") bytes");
}

CachingAllocator::~CachingAllocator() {
  // Every segment with nothing handed out goes back to the device. A segment
  // that still holds an allocated block stays: someone still points into it
  // (a tensor that outlives the allocator at exit, or a receive buffer that
  // GlooProcessGroup leaks on purpose because Gloo's thread may still write
  // into it), and freeing it would turn that leak into a use after free.
  // ThreadSanitizer caught exactly that: Gloo's event loop writing into an
  // abandoned receive while the backend registry's allocator freed it at
  // exit. The memory goes with the process.
  try {
    device_->synchronize();
  } catch (...) {
    // A destructor must not throw; the frees below are still worth doing.
  }
  std::set<Block*> blocks(small_free_.begin(), small_free_.end());
  blocks.insert(large_free_.begin(), large_free_.end());
  for (auto& [ptr, block] : allocated_) blocks.insert(block);
  for (const PendingEvent& pe : pending_) {
    device_->release_event(pe.event);
    blocks.insert(pe.block);
  }
  for (Block* first : blocks) {
    if (first->prev != nullptr) continue;  // segments are walked from their first block
    bool in_use = false;
    for (Block* b = first; b != nullptr && !in_use; b = b->next) in_use = b->state == BlockState::Allocated;
    if (!in_use) device_->raw_free(first->ptr);
  }
  for (Block* block : blocks) delete block;
}

size_t CachingAllocator::round_size(size_t nbytes) const {
  size_t m = options_.min_block_size;
  if (nbytes <= m) return m;
  return (nbytes + m - 1) / m * m;
}

size_t CachingAllocator::segment_size_for(size_t block_size) const {
  if (block_size <= options_.small_request_limit) return options_.small_segment_size;
  // Mid-sized tensors (activations, gradients of one layer) come and go in
  // varied sizes; packing them into shared 20 MiB segments lets a freed one be
  // reused by a slightly different size instead of costing a new segment.
  if (block_size < options_.medium_request_limit) return options_.medium_segment_size;
  return block_size;
}

void* CachingAllocator::allocate(size_t nbytes, uint64_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  ANVIL_CHECK(nbytes <= std::numeric_limits<size_t>::max() - options_.min_block_size,
              "CachingAllocator: out of memory: cannot allocate ", nbytes, " bytes, more than any device holds");
  // Blocks freed while other streams still used them may be ready by now;
  // checking here, rather than polling, costs nothing when none are pending.
  process_completed_events();

  size_t size = round_size(nbytes);
  bool small_pool = size <= options_.small_request_limit;
  Block* block = find_free_block(size, stream, small_pool);
  if (block != nullptr) {
    stats_.cache_hits++;
  } else {
    block = allocate_segment(size, stream, small_pool);
    if (block == nullptr) {
      // The device is full, but part of it may be our cache. Waiting for all
      // streams turns pending blocks into free ones; one of them may fit.
      stats_.num_ooms++;
      synchronize_and_drain_events();
      block = find_free_block(size, stream, small_pool);
      if (block != nullptr) {
        stats_.cache_hits++;
      } else {
        // Give back every whole cached segment and ask the device once more.
        release_unused_segments();
        block = allocate_segment(size, stream, small_pool);
        if (block == nullptr) throw_out_of_memory(nbytes, size, stream);
      }
    }
  }
  split_if_worthwhile(block, size);

  block->state = BlockState::Allocated;
  allocated_.emplace(block->ptr, block);
  stats_.num_allocs++;
  stats_.allocated_bytes += static_cast<int64_t>(block->size);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return block->ptr;
}

// Best fit: the smallest free block of this stream that is large enough. It
// leaves the largest blocks whole for the requests that need them.
CachingAllocator::Block* CachingAllocator::find_free_block(size_t size, uint64_t stream, bool small_pool) {
  FreeList& pool = pool_for(small_pool);
  Block key;
  key.stream = stream;
  key.size = size;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;
  Block* block = *it;
  pool.erase(it);
  return block;
}

// A new segment from the device, as one block, not yet in any free list.
// nullptr when the device has no room.
CachingAllocator::Block* CachingAllocator::allocate_segment(size_t size, uint64_t stream, bool small_pool) {
  size_t segment_size = segment_size_for(size);
  // Under set_memory_limit's cap the rounded segment counts, as under
  // PyTorch's memory fraction: the cap bounds what the allocator reserves.
  if (stats_.limit_bytes > 0 &&
      static_cast<size_t>(stats_.reserved_bytes) + segment_size > static_cast<size_t>(stats_.limit_bytes))
    return nullptr;  // as a full device: the caller frees the cache and retries
  void* ptr = device_->raw_alloc(segment_size);
  // A medium request rounds up to a shared 20 MiB segment; where the device
  // has no room for that but has for the block, a segment of just the block
  // beats an out-of-memory error with memory to spare.
  if (ptr == nullptr && !small_pool && segment_size > size) {
    segment_size = size;
    ptr = device_->raw_alloc(segment_size);
  }
  if (ptr == nullptr) return nullptr;
  stats_.device_mallocs++;
  stats_.reserved_bytes += static_cast<int64_t>(segment_size);
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);

  auto* block = new Block;
  block->ptr = static_cast<char*>(ptr);
  block->size = segment_size;
  block->stream = stream;
  block->small_pool = small_pool;
  return block;
}

// Cuts `size` bytes off the front of a block (not in a free list) and puts the
// rest back in the pool as a free block of its own.
void CachingAllocator::split_if_worthwhile(Block* block, size_t size) {
  size_t rest = block->size - size;
  // Small pool: any whole block is worth keeping. Large pool: a rest of at most
  // small_request_limit could only ever serve small requests, which the large
  // pool never sees, so it would be dead weight; hand it out with the block.
  bool worthwhile = block->small_pool ? rest >= options_.min_block_size : rest > options_.large_split_remainder;
  if (!worthwhile) return;

  auto* remainder = new Block;
  remainder->ptr = block->ptr + size;
  remainder->size = rest;
  remainder->stream = block->stream;
  remainder->small_pool = block->small_pool;
  remainder->prev = block;
  remainder->next = block->next;
  if (block->next != nullptr) block->next->prev = remainder;
  block->next = remainder;
  block->size = size;
  // No merge needed: the block's old right neighbour cannot be free, since
  // free neighbours are always merged when a block is freed.
  pool_for(remainder->small_pool).insert(remainder);
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocated_.find(ptr);
  ANVIL_CHECK(it != allocated_.end(), "CachingAllocator: deallocate of pointer ", ptr,
              " that this allocator did not hand out, or that was already freed");
  Block* block = it->second;
  allocated_.erase(it);
  stats_.num_frees++;
  stats_.allocated_bytes -= static_cast<int64_t>(block->size);

  // The owner is done with the block, but kernels queued on other streams may
  // still read it. An event marks the end of the work queued there so far; the
  // block becomes reusable once all those events have completed.
  for (uint64_t other : block->other_streams) {
    uint64_t event = device_->record_event(other);
    if (event == 0) continue;  // the device says there is nothing to wait for
    pending_.push_back({event, block});
    block->pending_events++;
  }
  block->other_streams.clear();
  if (block->pending_events > 0) {
    block->state = BlockState::AwaitingEvents;
    return;
  }
  free_block(block);
}

void CachingAllocator::record_stream(void* ptr, uint64_t stream) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocated_.find(ptr);
  ANVIL_CHECK(it != allocated_.end(), "CachingAllocator: record_stream(", ptr, ", stream ", stream,
              ") on a pointer that is not currently allocated by this allocator");
  Block* block = it->second;
  // Its own stream needs no event: reuse is on that stream, which runs in order.
  if (stream != block->stream) block->other_streams.insert(stream);
}

// Makes a block free: merges it with free neighbours of its segment, so that
// freeing all of a segment's blocks gives back one whole block again.
void CachingAllocator::free_block(Block* block) {
  block->state = BlockState::Free;
  if (block->prev != nullptr && block->prev->state == BlockState::Free) merge_into(block, block->prev);
  if (block->next != nullptr && block->next->state == BlockState::Free) merge_into(block, block->next);
  pool_for(block->small_pool).insert(block);
}

// Absorbs a free neighbour (which leaves its free list and is deleted).
// Neighbours share a segment and therefore a stream and a pool.
void CachingAllocator::merge_into(Block* block, Block* neighbour) {
  pool_for(neighbour->small_pool).erase(neighbour);
  if (neighbour == block->prev) {
    block->ptr = neighbour->ptr;
    block->prev = neighbour->prev;
    if (block->prev != nullptr) block->prev->next = block;
  } else {
    block->next = neighbour->next;
    if (block->next != nullptr) block->next->prev = block;
  }
  block->size += neighbour->size;
  delete neighbour;
}

void CachingAllocator::process_completed_events() {
  if (pending_.empty()) return;
  std::vector<PendingEvent> still_pending;
  for (const PendingEvent& pe : pending_) {
    if (!device_->event_done(pe.event)) {
      still_pending.push_back(pe);
      continue;
    }
    device_->release_event(pe.event);
    // free_block only deletes Free neighbours, never a block awaiting events,
    // so the blocks named later in pending_ stay valid.
    if (--pe.block->pending_events == 0) free_block(pe.block);
  }
  pending_.swap(still_pending);
}

// After synchronize() every stream is idle, so every event has completed.
void CachingAllocator::synchronize_and_drain_events() {
  device_->synchronize();
  for (const PendingEvent& pe : pending_) {
    device_->release_event(pe.event);
    if (--pe.block->pending_events == 0) free_block(pe.block);
  }
  pending_.clear();
}

// Returns the free blocks that are whole segments (no neighbours) to the
// device. A segment with any block in use has to stay: it can only go whole.
void CachingAllocator::release_unused_segments() {
  for (FreeList* pool : {&small_free_, &large_free_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (block->prev != nullptr || block->next != nullptr) {
        ++it;
        continue;
      }
      device_->raw_free(block->ptr);
      stats_.device_frees++;
      stats_.reserved_bytes -= static_cast<int64_t>(block->size);
      it = pool->erase(it);
      delete block;
    }
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  synchronize_and_drain_events();
  release_unused_segments();
}

void CachingAllocator::throw_out_of_memory(size_t nbytes, size_t size, uint64_t stream) {
  const MemoryStats& s = stats_;
  std::ostringstream msg;
  msg << "CachingAllocator: out of memory: tried to allocate " << format_bytes(nbytes) << " (a block of " << size
      << " bytes in a new segment of " << segment_size_for(size) << " bytes) on stream " << stream
      << ". Memory stats: allocated " << format_bytes(s.allocated_bytes) << ", reserved "
      << format_bytes(s.reserved_bytes) << ", cached " << format_bytes(s.reserved_bytes - s.allocated_bytes)
      << ", peak allocated " << format_bytes(s.peak_allocated_bytes) << ", peak reserved "
      << format_bytes(s.peak_reserved_bytes);
  if (s.limit_bytes > 0) msg << ", limit " << format_bytes(s.limit_bytes) << " (set_memory_limit)";
  msg << ".";
  std::string device = device_->describe_memory();
  if (!device.empty()) msg << " " << device << ".";
  msg << " The cache was already emptied; free tensors or use smaller batches.";
  throw Error(msg.str());
}

bool CachingAllocator::set_memory_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  ANVIL_CHECK(bytes <= static_cast<size_t>(std::numeric_limits<int64_t>::max()), "set_memory_limit: ", bytes,
              " bytes is more than any device holds");
  stats_.limit_bytes = static_cast<int64_t>(bytes);
  return true;
}

size_t CachingAllocator::memory_limit() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<size_t>(stats_.limit_bytes);
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

}  // namespace anvil
