// The caching allocator's logic on a fake device: malloc-backed memory with a
// capacity, counted raw allocations, and events the test completes by hand.
#include "core/base/caching_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/base/error.h"

namespace anvil {
namespace {

constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * 1024;

class FakeDeviceMemory : public DeviceMemory {
 public:
  explicit FakeDeviceMemory(size_t capacity) : capacity_(capacity) {}
  ~FakeDeviceMemory() override {
    for (auto& [ptr, size] : segments_) std::free(ptr);
  }

  void* raw_alloc(size_t nbytes) override {
    if (bytes_in_use_ + nbytes > capacity_) {
      failed_allocs++;
      return nullptr;
    }
    void* ptr = std::malloc(nbytes);
    if (ptr == nullptr) return nullptr;
    segments_[ptr] = nbytes;
    bytes_in_use_ += nbytes;
    raw_allocs++;
    return ptr;
  }
  void raw_free(void* ptr) override {
    auto it = segments_.find(ptr);
    if (it == segments_.end()) {
      ADD_FAILURE() << "raw_free of a pointer that raw_alloc did not return: " << ptr;
      return;
    }
    bytes_in_use_ -= it->second;
    segments_.erase(it);
    std::free(ptr);
    raw_frees++;
  }
  uint64_t record_event(uint64_t stream) override {
    uint64_t id = next_event_++;
    events_[id] = Event{stream, false, false};
    return id;
  }
  bool event_done(uint64_t event) override {
    EXPECT_FALSE(events_.at(event).released) << "query of released event " << event;
    return events_.at(event).done;
  }
  void release_event(uint64_t event) override {
    auto it = events_.find(event);
    ASSERT_NE(it, events_.end()) << "release of unknown event " << event;
    EXPECT_FALSE(it->second.released) << "event " << event << " released twice";
    // The allocator only lets go of an event it has seen complete.
    EXPECT_TRUE(it->second.done) << "event " << event << " released before it completed";
    it->second.released = true;
  }
  void synchronize() override {
    syncs++;
    for (auto& [id, ev] : events_) ev.done = true;
  }

  // Test controls.
  void complete(uint64_t event) { events_.at(event).done = true; }
  std::vector<uint64_t> outstanding_events() const {
    std::vector<uint64_t> ids;
    for (auto& [id, ev] : events_)
      if (!ev.done) ids.push_back(id);
    return ids;
  }
  size_t live_events() const {  // recorded and not yet released
    size_t n = 0;
    for (auto& [id, ev] : events_) n += !ev.released;
    return n;
  }
  uint64_t next_event_id() const { return next_event_; }
  bool event_finished(uint64_t event) const { return events_.at(event).done; }
  uint64_t event_stream(uint64_t event) const { return events_.at(event).stream; }
  size_t bytes_in_use() const { return bytes_in_use_; }
  // Whether [ptr, ptr + n) lies inside one segment this device handed out.
  bool owns(const void* ptr, size_t n) const {
    auto p = reinterpret_cast<uintptr_t>(ptr);
    auto it = segments_.upper_bound(const_cast<void*>(ptr));
    if (it == segments_.begin()) return false;
    --it;
    auto base = reinterpret_cast<uintptr_t>(it->first);
    return p >= base && p + n <= base + it->second;
  }

  int raw_allocs = 0;
  int raw_frees = 0;
  int failed_allocs = 0;
  int syncs = 0;

 private:
  struct Event {
    uint64_t stream;
    bool done;
    bool released;
  };
  size_t capacity_;
  size_t bytes_in_use_ = 0;
  std::map<void*, size_t, std::less<>> segments_;
  std::map<uint64_t, Event> events_;
  uint64_t next_event_ = 1;  // 0 means "nothing to wait for"
};

struct Setup {
  FakeDeviceMemory* fake;  // owned by alloc
  std::unique_ptr<CachingAllocator> alloc;
};

Setup make_allocator(size_t capacity = size_t{1} << 30, CachingAllocatorOptions options = {}) {
  auto device = std::make_unique<FakeDeviceMemory>(capacity);
  FakeDeviceMemory* fake = device.get();
  return {fake, std::make_unique<CachingAllocator>(std::move(device), options)};
}

char* as_bytes(void* p) { return static_cast<char*>(p); }

TEST(CachingAllocator, RoundsSizesToMinimumBlock) {
  auto [fake, alloc] = make_allocator();
  EXPECT_EQ(alloc->round_size(0), 512u);
  EXPECT_EQ(alloc->round_size(1), 512u);
  EXPECT_EQ(alloc->round_size(512), 512u);
  EXPECT_EQ(alloc->round_size(513), 1024u);
  EXPECT_EQ(alloc->round_size(3 * MiB + 1), 3 * MiB + 512);
  // Zero bytes still gives distinct, usable, non-null addresses.
  void* a = alloc->allocate(0);
  void* b = alloc->allocate(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  alloc->deallocate(a);
  alloc->deallocate(b);
}

TEST(CachingAllocator, ReusesFreedBlockWithoutDeviceMalloc) {
  auto [fake, alloc] = make_allocator();
  void* p = alloc->allocate(1000);
  EXPECT_EQ(fake->raw_allocs, 1);
  EXPECT_EQ(alloc->stats().cache_hits, 0);
  std::memset(p, 0x5a, 1000);
  alloc->deallocate(p);
  void* q = alloc->allocate(900);  // rounds to the same 1024-byte block
  EXPECT_EQ(q, p);
  EXPECT_EQ(fake->raw_allocs, 1);
  EXPECT_EQ(alloc->stats().cache_hits, 1);
  EXPECT_EQ(alloc->stats().device_mallocs, 1);
  alloc->deallocate(q);
}

TEST(CachingAllocator, SmallAllocationsShareOneSegment) {
  auto [fake, alloc] = make_allocator();
  void* p1 = alloc->allocate(1000);
  void* p2 = alloc->allocate(1000);
  EXPECT_EQ(fake->raw_allocs, 1);
  EXPECT_EQ(as_bytes(p2), as_bytes(p1) + 1024);  // split right after the first block
  EXPECT_EQ(alloc->stats().reserved_bytes, int64_t(2 * MiB));
  EXPECT_EQ(alloc->stats().allocated_bytes, 2048);
  EXPECT_EQ(alloc->stats().cache_hits, 1);
  alloc->deallocate(p1);
  alloc->deallocate(p2);
}

TEST(CachingAllocator, SmallRemainderOfOneBlockIsStillSplit) {
  auto [fake, alloc] = make_allocator();
  void* p1 = alloc->allocate(1 * MiB);
  void* p2 = alloc->allocate(1 * MiB - 512);  // leaves exactly 512 bytes of the segment
  void* p3 = alloc->allocate(1);
  EXPECT_EQ(as_bytes(p2), as_bytes(p1) + MiB);
  EXPECT_EQ(as_bytes(p3), as_bytes(p2) + MiB - 512);
  EXPECT_EQ(fake->raw_allocs, 1);
  void* p4 = alloc->allocate(1);  // the segment is full now
  EXPECT_EQ(fake->raw_allocs, 2);
  for (void* p : {p1, p2, p3, p4}) alloc->deallocate(p);
}

TEST(CachingAllocator, LargePoolSplitsOnlyWhenTheRestExceedsOneMiB) {
  auto [fake, alloc] = make_allocator();
  // 9.5 MiB is below 10 MiB, so it is cut from a shared 20 MiB segment.
  size_t first = 9 * MiB + 512 * KiB;
  void* p1 = alloc->allocate(first);
  EXPECT_EQ(alloc->stats().reserved_bytes, int64_t(20 * MiB));
  EXPECT_EQ(alloc->stats().allocated_bytes, int64_t(first));
  // The 10.5 MiB rest serves 10 MiB; a 0.5 MiB rest is not worth a block, so
  // the whole rest is handed out.
  void* p2 = alloc->allocate(10 * MiB);
  EXPECT_EQ(as_bytes(p2), as_bytes(p1) + first);
  EXPECT_EQ(fake->raw_allocs, 1);
  EXPECT_EQ(alloc->stats().allocated_bytes, int64_t(20 * MiB));
  // Requests of 10 MiB and more get a segment of exactly their size.
  void* p3 = alloc->allocate(12 * MiB + 100);
  EXPECT_EQ(fake->raw_allocs, 2);
  EXPECT_EQ(alloc->stats().reserved_bytes, int64_t(20 * MiB + 12 * MiB + 512));
  for (void* p : {p1, p2, p3}) alloc->deallocate(p);
}

TEST(CachingAllocator, SmallAndLargePoolsDoNotShareSegments) {
  auto [fake, alloc] = make_allocator();
  void* big = alloc->allocate(2 * MiB);
  alloc->deallocate(big);  // a free 20 MiB segment in the large pool
  void* small = alloc->allocate(4 * KiB);
  EXPECT_EQ(fake->raw_allocs, 2);  // not cut from the large segment
  EXPECT_FALSE(as_bytes(small) >= as_bytes(big) && as_bytes(small) < as_bytes(big) + 20 * MiB);
  alloc->deallocate(small);
}

TEST(CachingAllocator, FreedNeighboursCoalesce) {
  for (int order = 0; order < 3; ++order) {
    auto [fake, alloc] = make_allocator();
    void* a = alloc->allocate(512 * KiB);
    void* b = alloc->allocate(512 * KiB);
    void* c = alloc->allocate(512 * KiB);
    ASSERT_EQ(fake->raw_allocs, 1);
    // Free in different orders: merging with the left, the right, or both.
    std::vector<void*> frees = order == 0   ? std::vector<void*>{a, c, b}
                               : order == 1 ? std::vector<void*>{a, b, c}
                                            : std::vector<void*>{c, b, a};
    for (void* p : frees) alloc->deallocate(p);
    // Only a block merged back to the whole segment can hold 1 MiB at its start.
    void* whole = alloc->allocate(1 * MiB);
    EXPECT_EQ(whole, a) << "order " << order;
    EXPECT_EQ(fake->raw_allocs, 1) << "order " << order;
    alloc->deallocate(whole);
    // And only a whole segment can be given back.
    alloc->empty_cache();
    EXPECT_EQ(fake->raw_frees, 1) << "order " << order;
    EXPECT_EQ(fake->bytes_in_use(), 0u) << "order " << order;
  }
}

TEST(CachingAllocator, LargeBlocksCoalesce) {
  auto [fake, alloc] = make_allocator();
  void* a = alloc->allocate(3 * MiB);
  void* b = alloc->allocate(3 * MiB);
  void* c = alloc->allocate(3 * MiB);
  EXPECT_EQ(fake->raw_allocs, 1);
  alloc->deallocate(b);
  alloc->deallocate(a);
  alloc->deallocate(c);
  void* big = alloc->allocate(9 * MiB + 512 * KiB);
  EXPECT_EQ(big, a);
  EXPECT_EQ(fake->raw_allocs, 1);
  alloc->deallocate(big);
}

TEST(CachingAllocator, StatsTrackAllocatedReservedAndPeaks) {
  auto [fake, alloc] = make_allocator();
  void* a = alloc->allocate(1000);  // 1024
  void* b = alloc->allocate(3 * MiB);  // large pool, 20 MiB segment
  MemoryStats s = alloc->stats();
  EXPECT_EQ(s.allocated_bytes, int64_t(1024 + 3 * MiB));
  EXPECT_EQ(s.reserved_bytes, int64_t(2 * MiB + 20 * MiB));
  EXPECT_EQ(s.peak_allocated_bytes, s.allocated_bytes);
  EXPECT_EQ(s.peak_reserved_bytes, s.reserved_bytes);
  EXPECT_EQ(s.num_allocs, 2);
  EXPECT_EQ(s.device_mallocs, 2);

  alloc->deallocate(b);
  s = alloc->stats();
  EXPECT_EQ(s.allocated_bytes, 1024);
  EXPECT_EQ(s.reserved_bytes, int64_t(22 * MiB));  // still cached
  EXPECT_EQ(s.peak_allocated_bytes, int64_t(1024 + 3 * MiB));
  EXPECT_EQ(s.num_frees, 1);

  alloc->empty_cache();
  s = alloc->stats();
  EXPECT_EQ(s.reserved_bytes, int64_t(2 * MiB));
  EXPECT_EQ(s.peak_reserved_bytes, int64_t(22 * MiB));
  EXPECT_EQ(s.device_frees, 1);

  alloc->reset_peak_stats();
  s = alloc->stats();
  EXPECT_EQ(s.peak_allocated_bytes, 1024);
  EXPECT_EQ(s.peak_reserved_bytes, int64_t(2 * MiB));
  void* c = alloc->allocate(4096);
  EXPECT_EQ(alloc->stats().peak_allocated_bytes, 1024 + 4096);
  alloc->deallocate(a);
  alloc->deallocate(c);
  EXPECT_EQ(alloc->stats().allocated_bytes, 0);
  EXPECT_EQ(alloc->stats().peak_allocated_bytes, 1024 + 4096);
}

TEST(CachingAllocator, EmptyCacheReturnsOnlyUnusedSegments) {
  auto [fake, alloc] = make_allocator();
  void* keep = alloc->allocate(100);  // its segment must stay
  void* small = alloc->allocate(1 * MiB);  // same small segment as `keep`
  void* large = alloc->allocate(30 * MiB);  // its own segment
  void* medium = alloc->allocate(2 * MiB);  // a 20 MiB segment
  alloc->deallocate(small);
  alloc->deallocate(large);
  alloc->deallocate(medium);
  EXPECT_EQ(fake->raw_allocs, 3);
  alloc->empty_cache();
  EXPECT_EQ(fake->raw_frees, 2);
  EXPECT_EQ(fake->bytes_in_use(), 2 * MiB);
  EXPECT_EQ(alloc->stats().device_frees, 2);
  EXPECT_EQ(alloc->stats().reserved_bytes, int64_t(2 * MiB));
  alloc->deallocate(keep);
  alloc->empty_cache();
  EXPECT_EQ(fake->bytes_in_use(), 0u);
  EXPECT_EQ(alloc->stats().reserved_bytes, 0);
  EXPECT_EQ(fake->raw_frees, fake->raw_allocs);
}

TEST(CachingAllocator, FreeBlocksAreOnlyReusedOnTheirStream) {
  auto [fake, alloc] = make_allocator();
  void* on1 = alloc->allocate(4096, /*stream_id=*/1);
  alloc->deallocate(on1);
  void* on2 = alloc->allocate(4096, /*stream_id=*/2);
  EXPECT_EQ(fake->raw_allocs, 2);  // stream 2 got its own segment
  EXPECT_FALSE(as_bytes(on2) >= as_bytes(on1) && as_bytes(on2) < as_bytes(on1) + 2 * MiB);
  void* again1 = alloc->allocate(4096, 1);
  EXPECT_EQ(again1, on1);
  EXPECT_EQ(fake->raw_allocs, 2);
  // And the other way round: a free block of a later stream is not taken either.
  alloc->deallocate(on2);
  void* on0 = alloc->allocate(4096, /*stream_id=*/0);
  EXPECT_EQ(fake->raw_allocs, 3);
  EXPECT_NE(on0, on2);
  alloc->deallocate(on0);
  alloc->deallocate(again1);
}

TEST(CachingAllocator, RecordStreamDelaysReuseUntilEventCompletes) {
  auto [fake, alloc] = make_allocator();
  void* p = alloc->allocate(4096, 0);
  alloc->record_stream(p, 7);
  alloc->deallocate(p);
  auto events = fake->outstanding_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(fake->event_stream(events[0]), 7u);
  EXPECT_EQ(alloc->stats().allocated_bytes, 0);  // the owner let go of it

  void* q = alloc->allocate(4096, 0);
  EXPECT_NE(q, p) << "reused while stream 7 may still read it";
  alloc->deallocate(q);

  fake->complete(events[0]);
  void* r = alloc->allocate(4096, 0);
  EXPECT_EQ(r, p);  // freed at this allocate, reused at once
  EXPECT_EQ(fake->live_events(), 0u);  // and the event was released
  alloc->deallocate(r);
}

TEST(CachingAllocator, BlockWaitsForEveryRecordedStream) {
  auto [fake, alloc] = make_allocator();
  void* p = alloc->allocate(4096, 0);
  alloc->record_stream(p, 1);
  alloc->record_stream(p, 2);
  alloc->record_stream(p, 2);  // recorded twice, waited on once
  alloc->record_stream(p, 0);  // its own stream: nothing to wait for
  alloc->deallocate(p);
  auto events = fake->outstanding_events();
  ASSERT_EQ(events.size(), 2u);
  fake->complete(events[0]);
  void* q = alloc->allocate(4096, 0);
  EXPECT_NE(q, p);
  fake->complete(events[1]);
  void* r = alloc->allocate(4096, 0);
  EXPECT_EQ(r, p);
  alloc->deallocate(q);
  alloc->deallocate(r);
}

TEST(CachingAllocator, EmptyCacheWaitsForPendingBlocks) {
  auto [fake, alloc] = make_allocator();
  void* p = alloc->allocate(4096, 0);
  alloc->record_stream(p, 3);
  alloc->deallocate(p);
  alloc->empty_cache();  // synchronize() completes the event; the segment is whole again
  EXPECT_GE(fake->syncs, 1);
  EXPECT_EQ(fake->live_events(), 0u);
  EXPECT_EQ(fake->bytes_in_use(), 0u);
  EXPECT_EQ(alloc->stats().reserved_bytes, 0);
}

TEST(CachingAllocator, OutOfMemoryFreesCacheAndRetries) {
  // Two small segments fill the device; both end up cached on stream 0.
  auto [fake, alloc] = make_allocator(4 * MiB);
  void* a = alloc->allocate(1 * MiB, 0);
  void* b = alloc->allocate(1 * MiB, 0);
  void* c = alloc->allocate(1 * MiB, 0);
  EXPECT_EQ(fake->raw_allocs, 2);
  for (void* p : {a, b, c}) alloc->deallocate(p);
  // Stream 1 cannot use stream 0's cache, and the device is full: the
  // allocator must give its cache back and try again.
  void* d = alloc->allocate(1 * MiB, 1);
  ASSERT_NE(d, nullptr);
  MemoryStats s = alloc->stats();
  EXPECT_EQ(s.num_ooms, 1);
  EXPECT_EQ(s.device_frees, 2);
  EXPECT_EQ(s.reserved_bytes, int64_t(2 * MiB));
  EXPECT_GE(fake->syncs, 1);
  alloc->deallocate(d);
}

// What a training loop sees on OOM: an error with the memory stats, raised
// only after the cache was given back, and a smaller request (the lowered
// batch) succeeding right after.
TEST(CachingAllocator, OutOfMemoryErrorHasStatsAndLeavesNoCache) {
  auto [fake, alloc] = make_allocator(40 * MiB);
  void* kept = alloc->allocate(12 * MiB);
  void* cached = alloc->allocate(12 * MiB);
  alloc->deallocate(cached);  // 12 MiB stays reserved in the cache
  std::string message;
  try {
    alloc->allocate(30 * MiB);
  } catch (const Error& e) {
    message = e.what();
  }
  for (const char* part : {"out of memory", "tried to allocate 31457280", "Memory stats: allocated 12", "reserved",
                           "peak allocated", "cache was already emptied"})
    EXPECT_NE(message.find(part), std::string::npos) << part << " missing from: " << message;
  MemoryStats s = alloc->stats();
  EXPECT_EQ(s.num_ooms, 1);
  EXPECT_EQ(s.reserved_bytes, s.allocated_bytes) << "the cache was not freed before failing";
  EXPECT_EQ(fake->bytes_in_use(), 12 * MiB);
  void* smaller = alloc->allocate(15 * MiB);  // the batch, halved
  EXPECT_NE(smaller, nullptr);
  alloc->deallocate(smaller);
  alloc->deallocate(kept);
}

TEST(CachingAllocator, OutOfMemoryRetryWithLargeSegments) {
  auto [fake, alloc] = make_allocator(24 * MiB);
  void* a = alloc->allocate(12 * MiB);
  alloc->deallocate(a);  // 12 MiB cached, cannot hold 16 MiB
  void* b = alloc->allocate(16 * MiB);
  EXPECT_EQ(alloc->stats().num_ooms, 1);
  EXPECT_EQ(fake->raw_frees, 1);
  EXPECT_EQ(fake->bytes_in_use(), 16 * MiB);
  alloc->deallocate(b);
}

// A medium request (1-10 MiB) takes a 20 MiB segment; a device with less room
// than that but enough for the block gets asked for the block's size alone.
TEST(CachingAllocator, MediumRequestFallsBackToItsOwnSizeWhereTwentyMiBDoNotFit) {
  auto [fake, alloc] = make_allocator(12 * MiB);
  void* a = alloc->allocate(4 * MiB + 100);
  void* b = alloc->allocate(3 * MiB);
  const size_t a_size = 4 * MiB + 512;  // rounded to the 512-byte minimum block
  EXPECT_EQ(fake->bytes_in_use(), a_size + 3 * MiB);
  EXPECT_EQ(alloc->stats().reserved_bytes, static_cast<int64_t>(a_size + 3 * MiB));
  EXPECT_EQ(fake->raw_allocs, 2);
  std::memset(a, 1, 4 * MiB + 100);
  std::memset(b, 2, 3 * MiB);
  EXPECT_THROW(alloc->allocate(6 * MiB), Error);  // 4 + 3 + 6 > 12, even as its own size
  alloc->deallocate(a);
  alloc->deallocate(b);

  // With room, the shared segment again: one device call serves both.
  auto [roomy, shared] = make_allocator(64 * MiB);
  void* c = shared->allocate(4 * MiB);
  void* d = shared->allocate(3 * MiB);
  EXPECT_EQ(roomy->raw_allocs, 1);
  EXPECT_EQ(roomy->bytes_in_use(), 20 * MiB);
  shared->deallocate(c);
  shared->deallocate(d);
}

TEST(CachingAllocator, OutOfMemoryUsesABlockThatWasWaitingOnAnEvent) {
  auto [fake, alloc] = make_allocator(2 * MiB);
  void* a = alloc->allocate(1 * MiB);
  void* b = alloc->allocate(1 * MiB);
  alloc->record_stream(b, 5);
  alloc->deallocate(b);  // pending: not reusable yet
  // The device is full; synchronizing completes the event, freeing b's block.
  void* c = alloc->allocate(1 * MiB);
  EXPECT_EQ(c, b);
  EXPECT_EQ(alloc->stats().num_ooms, 1);
  EXPECT_EQ(fake->raw_allocs, 1);
  alloc->deallocate(a);
  alloc->deallocate(c);
}

TEST(CachingAllocator, RequestBeyondCapacityThrowsAndAllocatorStaysUsable) {
  auto [fake, alloc] = make_allocator(64 * MiB);
  void* live = alloc->allocate(5000);
  std::memset(live, 1, 5000);
  void* cached = alloc->allocate(3 * MiB);
  alloc->deallocate(cached);

  size_t too_big = 64 * MiB + 1;
  try {
    alloc->allocate(too_big);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(too_big)), std::string::npos) << msg;
    for (const char* word : {"allocated", "reserved", "cached", "peak"})
      EXPECT_NE(msg.find(word), std::string::npos) << word << " missing in: " << msg;
  }
  MemoryStats s = alloc->stats();
  EXPECT_EQ(s.num_ooms, 1);
  EXPECT_EQ(s.allocated_bytes, 5120);
  EXPECT_EQ(s.num_allocs, 2);  // the failed request is not counted
  EXPECT_EQ(s.reserved_bytes, int64_t(2 * MiB));  // the cached 20 MiB went back
  EXPECT_EQ(uint64_t(s.reserved_bytes), fake->bytes_in_use());

  // Still usable: the live block is intact, new requests are served.
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(as_bytes(live)[i], 1);
  void* after = alloc->allocate(32 * MiB);
  ASSERT_NE(after, nullptr);
  alloc->deallocate(after);
  alloc->deallocate(live);
  alloc->empty_cache();
  EXPECT_EQ(fake->bytes_in_use(), 0u);
}

TEST(CachingAllocator, ImpossibleSizeThrows) {
  auto [fake, alloc] = make_allocator();
  EXPECT_THROW(alloc->allocate(SIZE_MAX), Error);
  EXPECT_THROW(alloc->allocate(SIZE_MAX - 100), Error);
  void* p = alloc->allocate(10);
  alloc->deallocate(p);
}

TEST(CachingAllocator, BadPointersAreRejected) {
  auto [fake, alloc] = make_allocator();
  alloc->deallocate(nullptr);  // no-op
  alloc->record_stream(nullptr, 3);
  int not_ours = 0;
  EXPECT_THROW(alloc->deallocate(&not_ours), Error);
  EXPECT_THROW(alloc->record_stream(&not_ours, 1), Error);
  void* p = alloc->allocate(2048);
  EXPECT_THROW(alloc->deallocate(as_bytes(p) + 512), Error);  // inside a block, not its start
  alloc->deallocate(p);
  EXPECT_THROW(alloc->deallocate(p), Error);  // double free
  EXPECT_EQ(alloc->stats().num_frees, 1);
}

TEST(CachingAllocator, RejectsInconsistentOptions) {
  auto device = [] { return std::make_unique<FakeDeviceMemory>(MiB); };
  CachingAllocatorOptions o;
  o.min_block_size = 500;
  EXPECT_THROW(CachingAllocator(device(), o), Error);
  o = {};
  o.small_segment_size = 512 * KiB;  // smaller than a small request may be
  EXPECT_THROW(CachingAllocator(device(), o), Error);
  o = {};
  o.medium_segment_size = 8 * MiB;
  EXPECT_THROW(CachingAllocator(device(), o), Error);
  EXPECT_THROW(CachingAllocator(nullptr), Error);
}

TEST(CachingAllocator, DestructorReturnsEverySegmentNotInUse) {
  // Count through a shared flag: the fake dies with the allocator.
  struct Watch : FakeDeviceMemory {
    using FakeDeviceMemory::FakeDeviceMemory;
    std::shared_ptr<size_t> in_use_at_end = std::make_shared<size_t>(~size_t{0});
    ~Watch() override { *in_use_at_end = bytes_in_use(); }
  };
  auto watch = std::make_unique<Watch>(size_t{1} << 30);
  auto in_use = watch->in_use_at_end;
  {
    CachingAllocator alloc(std::move(watch));
    void* small_live = alloc.allocate(100);  // its small segment stays: still in use
    void* small_freed = alloc.allocate(200);  // the same segment
    void* b = alloc.allocate(5 * MiB);
    alloc.record_stream(b, 1);
    alloc.deallocate(b);  // pending on an event at destruction: returned
    void* large_freed = alloc.allocate(12 * MiB);
    alloc.deallocate(large_freed);  // cached at destruction: returned
    alloc.allocate(50 * MiB);  // still live at destruction: its segment stays
    alloc.deallocate(small_freed);
    (void)small_live;
  }
  // Memory still pointed into is never freed under its owner (a tensor that
  // outlives the allocator, a receive Gloo may still complete); everything
  // else went back.
  EXPECT_EQ(*in_use, 50 * MiB + CachingAllocatorOptions{}.small_segment_size);
}

// Random allocations and frees across both pools and three streams, with
// record_stream and events completed at random. Checks that live blocks never
// overlap, lie inside device segments, keep their contents, and that freeing
// everything gives all memory back.
void stress(CachingAllocatorOptions options, size_t capacity, size_t max_size, uint32_t seed) {
  auto [fake, alloc] = make_allocator(capacity, options);
  std::mt19937 rng(seed);
  struct Live {
    size_t size;
    unsigned char tag;
    uint64_t stream;
  };
  std::map<uintptr_t, Live> live;  // by start address
  std::vector<uintptr_t> order;  // the same blocks in allocation order
  // Freed blocks another stream may still read, until the event completes.
  struct InFlight {
    uintptr_t start;
    size_t size;
    uint64_t event;
  };
  std::vector<InFlight> in_flight;
  int ooms = 0;

  auto fill = [](void* p, size_t n, unsigned char tag) {
    size_t edge = std::min<size_t>(n, 64);
    std::memset(p, tag, edge);
    std::memset(as_bytes(p) + n - edge, tag, edge);
  };
  auto intact = [](void* p, size_t n, unsigned char tag) {
    size_t edge = std::min<size_t>(n, 64);
    for (size_t i = 0; i < edge; ++i)
      if (static_cast<unsigned char>(as_bytes(p)[i]) != tag ||
          static_cast<unsigned char>(as_bytes(p)[n - 1 - i]) != tag)
        return false;
    return true;
  };
  auto random_size = [&]() -> size_t {
    // Log-uniform from 1 byte to max_size: every pool and segment kind gets traffic.
    std::uniform_real_distribution<double> exponent(0.0, std::log2(double(max_size)));
    return std::max<size_t>(1, size_t(std::exp2(exponent(rng))));
  };
  auto free_one = [&](std::map<uintptr_t, Live>::iterator it) {
    void* p = reinterpret_cast<void*>(it->first);
    ASSERT_TRUE(intact(p, it->second.size, it->second.tag)) << "block at " << p << " was overwritten";
    uint64_t events_expected = 0;
    if (rng() % 4 == 0) {
      uint64_t other = rng() % 3;
      alloc->record_stream(p, other);
      events_expected = other != it->second.stream;  // its own stream needs no event
    }
    uint64_t first_event = fake->next_event_id();
    alloc->deallocate(p);
    ASSERT_EQ(fake->next_event_id() - first_event, events_expected);
    for (uint64_t ev = first_event; ev < fake->next_event_id(); ++ev)
      in_flight.push_back({it->first, it->second.size, ev});
    live.erase(it);
  };

  for (int step = 0; step < 20000; ++step) {
    uint32_t action = rng() % 100;
    if (action < 55 && live.size() < 200) {
      size_t n = random_size();
      uint64_t stream = rng() % 3;
      void* p = nullptr;
      try {
        p = alloc->allocate(n, stream);
      } catch (const Error& e) {
        ASSERT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
        ++ooms;
        continue;
      }
      auto start = reinterpret_cast<uintptr_t>(p);
      ASSERT_TRUE(fake->owns(p, n)) << "block outside any device segment";
      auto next = live.lower_bound(start);
      if (next != live.end()) {
        ASSERT_LE(start + n, next->first) << "overlaps the next live block";
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second.size, start) << "overlaps the previous live block";
      }
      std::erase_if(in_flight, [&](const InFlight& f) { return fake->event_finished(f.event); });
      for (const InFlight& f : in_flight)
        ASSERT_TRUE(start + n <= f.start || f.start + f.size <= start)
            << "reuses memory another stream may still read (event " << f.event << ")";
      auto tag = static_cast<unsigned char>(rng());
      fill(p, n, tag);
      live[start] = Live{n, tag, stream};
      order.push_back(start);
    } else if (action < 95 && !live.empty()) {
      // Pick by allocation order, not address, so a seed replays the same run.
      size_t pick = rng() % order.size();
      std::swap(order[pick], order.back());
      free_one(live.find(order.back()));
      order.pop_back();
      if (testing::Test::HasFatalFailure()) return;
    } else if (action < 99) {
      auto events = fake->outstanding_events();
      if (!events.empty()) fake->complete(events[rng() % events.size()]);
    } else {
      alloc->empty_cache();
    }
    MemoryStats s = alloc->stats();
    ASSERT_EQ(uint64_t(s.reserved_bytes), fake->bytes_in_use());
    ASSERT_LE(s.allocated_bytes, s.reserved_bytes);
    ASSERT_EQ(s.num_allocs - s.num_frees, int64_t(live.size()));
  }
  order.clear();
  while (!live.empty()) {
    free_one(live.begin());
    if (testing::Test::HasFatalFailure()) return;
  }
  alloc->empty_cache();
  MemoryStats s = alloc->stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(fake->bytes_in_use(), 0u);
  EXPECT_EQ(fake->raw_allocs, fake->raw_frees);
  EXPECT_EQ(s.device_mallocs, s.device_frees);
  EXPECT_EQ(fake->live_events(), 0u);
  EXPECT_GT(s.cache_hits, 0);
  std::cout << "  stress: " << s.num_allocs << " allocs, " << s.device_mallocs << " device mallocs, " << s.cache_hits
            << " cache hits, " << ooms << " out-of-memory errors\n";
}

TEST(CachingAllocator, RandomStressDefaultOptions) {
  stress(CachingAllocatorOptions{}, size_t{1} << 30, 40 * MiB, 1234);
}

TEST(CachingAllocator, RandomStressTinyThresholdsAndTightDevice) {
  // Tiny thresholds make splits, merges and segment turnover frequent; the
  // small device makes out-of-memory recovery part of the run.
  CachingAllocatorOptions o;
  o.small_request_limit = 4 * KiB;
  o.small_segment_size = 8 * KiB;
  o.medium_request_limit = 32 * KiB;
  o.medium_segment_size = 64 * KiB;
  o.large_split_remainder = 4 * KiB;
  stress(o, 2 * MiB, 100 * KiB, 99);
}

TEST(CachingAllocator, ConcurrentAllocateAndFree) {
  auto [fake, alloc] = make_allocator();
  constexpr int kThreads = 4, kOps = 2000;
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<unsigned char*, size_t>> mine;
      for (int i = 0; i < kOps; ++i) {
        if (mine.size() < 20 && rng() % 2 == 0) {
          size_t n = 1 + rng() % (3 * MiB);
          auto* p = static_cast<unsigned char*>(alloc->allocate(n, t % 2));
          p[0] = p[n - 1] = static_cast<unsigned char>(t);
          mine.emplace_back(p, n);
        } else if (!mine.empty()) {
          auto [p, n] = mine.back();
          if (p[0] != t || p[n - 1] != t) corrupted++;
          alloc->deallocate(p);
          mine.pop_back();
        }
      }
      for (auto [p, n] : mine) alloc->deallocate(p);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(corrupted.load(), 0);
  MemoryStats s = alloc->stats();
  EXPECT_EQ(s.num_allocs, s.num_frees);
  EXPECT_EQ(s.allocated_bytes, 0);
  alloc->empty_cache();
  EXPECT_EQ(fake->bytes_in_use(), 0u);
}

}  // namespace
}  // namespace anvil
