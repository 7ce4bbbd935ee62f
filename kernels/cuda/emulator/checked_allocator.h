#pragma once
// The emulated build wraps each GPU's caching allocator in this decorator
// (kernels/cuda/runtime/memory.cpp), so memcheck knows which device memory is handed
// out to tensors and which the allocator merely keeps: a kernel that touches
// a block after its tensor was freed is a bug even while the block sits,
// still mapped, in the cache. Both notes are stream-ordered, as the
// allocator's reuse is: a block becomes "cached" only when every stream that
// used it (its own, and those named by record_stream) has reached the point
// where it was freed; so a missing record_stream shows as a memcheck finding
// on the side stream's kernel.
#include <algorithm>
#include <mutex>
#include <memory>
#include <unordered_map>
#include <vector>
#include <functional>

#include "core/base/allocator.h"
#include "kernels/cuda/emulator/emulator.h"

namespace anvil::emulator {

class CheckedAllocator final : public Allocator {
 public:
  using StreamOf = std::function<CUstream_st*(uint64_t stream_id)>;
  CheckedAllocator(std::unique_ptr<Allocator> inner, StreamOf stream_of)
      : inner_(std::move(inner)), stream_of_(std::move(stream_of)) {}

  void* allocate(size_t nbytes, uint64_t stream_id = 0) override {
    void* p = inner_->allocate(nbytes, stream_id);
    if (p && nbytes) {
      note_handed_out_on(stream_of_(stream_id), p, nbytes);
      std::lock_guard<std::mutex> lock(mutex_);
      blocks_[p] = Block{nbytes, {stream_id}};
    }
    return p;
  }
  void deallocate(void* ptr) override {
    if (ptr) {
      std::vector<CUstream_st*> streams;
      size_t nbytes = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = blocks_.find(ptr);
        if (it != blocks_.end()) {
          nbytes = it->second.nbytes;
          for (uint64_t id : it->second.streams) streams.push_back(stream_of_(id));
          blocks_.erase(it);
        }
      }
      if (nbytes) note_cached_after(streams, ptr, nbytes);
    }
    inner_->deallocate(ptr);
  }
  void record_stream(void* ptr, uint64_t stream_id) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = blocks_.find(ptr);
      if (it != blocks_.end()) {
        auto& s = it->second.streams;
        if (std::find(s.begin(), s.end(), stream_id) == s.end()) s.push_back(stream_id);
      }
    }
    inner_->record_stream(ptr, stream_id);
  }
  MemoryStats stats() const override { return inner_->stats(); }
  void reset_peak_stats() override { inner_->reset_peak_stats(); }
  void empty_cache() override { inner_->empty_cache(); }
  bool set_memory_limit(size_t bytes) override { return inner_->set_memory_limit(bytes); }
  size_t memory_limit() const override { return inner_->memory_limit(); }

 private:
  struct Block {
    size_t nbytes;
    std::vector<uint64_t> streams;
  };
  std::unique_ptr<Allocator> inner_;
  StreamOf stream_of_;
  std::mutex mutex_;
  std::unordered_map<void*, Block> blocks_;
};

}  // namespace anvil::emulator
