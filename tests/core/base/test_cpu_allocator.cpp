#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/base/allocator.h"
#include "core/base/error.h"

namespace anvil {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

bool huge_pages_on() {
  const char* env = std::getenv("ANVIL_CPU_HUGE_PAGES");
  return env == nullptr || std::strcmp(env, "0") != 0;
}

// The VmFlags of the mapping holding p, from /proc/self/smaps ("" when not
// found): "hg" there means the range was advised onto huge pages.
std::string vm_flags_of(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> begin >> dash >> end && dash == '-') {
      inside = begin <= addr && addr < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

// Blocks of 2 MiB or more come 2 MiB aligned, whole huge pages, advised onto
// transparent huge pages; smaller ones stay 64-byte granular.
void expect_huge_page_block(Allocator& alloc, size_t nbytes) {
  void* p = alloc.allocate(nbytes);
  ASSERT_NE(p, nullptr);
  std::memset(p, 0x3c, nbytes);
  if (!huge_pages_on()) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  } else {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePage, 0u) << "size " << nbytes;
    std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
    if (thp) {  // a kernel without THP has no flag to show
      EXPECT_NE(vm_flags_of(p).find(" hg"), std::string::npos) << "size " << nbytes << ": " << vm_flags_of(p);
    }
  }
  alloc.deallocate(p);
}

TEST(CpuAllocator, LargeBlocksGoOnHugePages) {
  auto alloc = make_cpu_allocator();
  expect_huge_page_block(*alloc, kHugePage);
  expect_huge_page_block(*alloc, (size_t{5} << 20) + 3);
  // Held as whole huge pages, and counted so.
  void* p = alloc->allocate((size_t{5} << 20) + 3);
  EXPECT_EQ(alloc->stats().allocated_bytes, huge_pages_on() ? int64_t{6} << 20 : (int64_t{5} << 20) + 64);
  alloc->deallocate(p);
  // Just under 2 MiB stays on the 64-byte rounding.
  p = alloc->allocate(kHugePage - 100);
  EXPECT_EQ(alloc->stats().allocated_bytes, static_cast<int64_t>(kHugePage - 64));
  alloc->deallocate(p);
  EXPECT_EQ(alloc->stats().allocated_bytes, 0);
}

// Rounding up to whole huge pages must not wrap a size near SIZE_MAX around
// to a small block: both allocators refuse it with the size in the message.
TEST(CpuAllocator, SizesThatWouldWrapWhenRoundedAreErrors) {
  const size_t top = std::numeric_limits<size_t>::max();
  for (size_t n : {top - kHugePage + 1, top - (size_t{1} << 20), top - 600}) {
    auto plain = make_cpu_allocator();
    try {
      plain->allocate(n);
      FAIL() << "expected anvil::Error for " << n << " bytes";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(n)), std::string::npos) << e.what();
    }
    EXPECT_EQ(plain->stats().allocated_bytes, 0);
    auto cached = make_cpu_caching_allocator();
    EXPECT_THROW(cached->allocate(n), Error) << n << " bytes";
    EXPECT_EQ(cached->stats().reserved_bytes, 0);
  }
}

TEST(CpuCachingAllocator, SegmentsGoOnHugePages) {
  auto alloc = make_cpu_caching_allocator();
  expect_huge_page_block(*alloc, size_t{64} << 20);  // a segment of its own
  expect_huge_page_block(*alloc, size_t{3} << 20);  // the start of a shared medium segment
}

TEST(CpuAllocator, BlocksAre64ByteAlignedAndWritable) {
  auto alloc = make_cpu_allocator();
  std::vector<void*> ptrs;
  for (size_t n : {size_t{1}, size_t{7}, size_t{63}, size_t{64}, size_t{65}, size_t{1000}, size_t{4096},
                   size_t{1} << 20, (size_t{1} << 20) + 3}) {
    void* p = alloc->allocate(n);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << "size " << n;
    std::memset(p, 0xab, n);  // the sanitizers catch a block shorter than asked
    ptrs.push_back(p);
  }
  for (void* p : ptrs) alloc->deallocate(p);
}

TEST(CpuAllocator, ZeroBytesGivesDistinctNonNullPointers) {
  auto alloc = make_cpu_allocator();
  void* a = alloc->allocate(0);
  void* b = alloc->allocate(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  alloc->deallocate(a);
  alloc->deallocate(b);
  EXPECT_EQ(alloc->stats().allocated_bytes, 0);
}

TEST(CpuAllocator, StatsCountRoundedBytesAndPeak) {
  auto alloc = make_cpu_allocator();
  void* a = alloc->allocate(100);  // 128 bytes held
  void* b = alloc->allocate(1000);  // 1024
  MemoryStats s = alloc->stats();
  EXPECT_EQ(s.allocated_bytes, 128 + 1024);
  EXPECT_EQ(s.reserved_bytes, s.allocated_bytes);  // nothing is cached on the host
  EXPECT_EQ(s.peak_allocated_bytes, 128 + 1024);
  EXPECT_EQ(s.num_allocs, 2);
  EXPECT_EQ(s.num_frees, 0);
  EXPECT_EQ(s.cache_hits, 0);

  alloc->deallocate(b);
  s = alloc->stats();
  EXPECT_EQ(s.allocated_bytes, 128);
  EXPECT_EQ(s.peak_allocated_bytes, 128 + 1024);
  EXPECT_EQ(s.num_frees, 1);

  alloc->reset_peak_stats();
  EXPECT_EQ(alloc->stats().peak_allocated_bytes, 128);
  void* c = alloc->allocate(64);
  EXPECT_EQ(alloc->stats().peak_allocated_bytes, 128 + 64);
  alloc->deallocate(a);
  alloc->deallocate(c);
  s = alloc->stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.num_allocs, 3);
  EXPECT_EQ(s.num_frees, 3);
}

TEST(CpuAllocator, BadFreesAreErrors) {
  auto alloc = make_cpu_allocator();
  alloc->deallocate(nullptr);  // no-op
  int not_ours = 0;
  EXPECT_THROW(alloc->deallocate(&not_ours), Error);
  void* p = alloc->allocate(16);
  alloc->deallocate(p);
  EXPECT_THROW(alloc->deallocate(p), Error);
  EXPECT_EQ(alloc->stats().num_frees, 1);
}

TEST(CpuAllocator, ImpossibleSizeThrowsWithTheSize) {
  auto alloc = make_cpu_allocator();
  size_t huge = std::numeric_limits<size_t>::max() - 5;
  try {
    alloc->allocate(huge);
    FAIL() << "expected anvil::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(huge)), std::string::npos) << e.what();
  }
  EXPECT_EQ(alloc->stats().allocated_bytes, 0);
}

TEST(CpuAllocator, OutOfMemoryThrowsWithTheSize) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on huge allocations instead of returning nullptr";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer aborts on huge allocations instead of returning nullptr";
#endif
#endif
  auto alloc = make_cpu_allocator();
  size_t huge = size_t{1} << 62;  // more than any machine's address space
  try {
    alloc->allocate(huge);
    FAIL() << "expected anvil::Error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(huge)), std::string::npos) << msg;
  }
  void* p = alloc->allocate(10);  // still usable
  alloc->deallocate(p);
}

TEST(CpuAllocator, ConcurrentUseKeepsStatsExact) {
  auto alloc = make_cpu_allocator();
  constexpr int kThreads = 4, kOps = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<void*> mine;
      for (int i = 0; i < kOps; ++i) {
        if (i % 3 != 2) {
          mine.push_back(alloc->allocate(64 * (1 + (i + t) % 5)));
        } else {
          alloc->deallocate(mine.back());
          mine.pop_back();
        }
      }
      for (void* p : mine) alloc->deallocate(p);
    });
  }
  for (auto& th : threads) th.join();
  MemoryStats s = alloc->stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.num_allocs, s.num_frees);
  EXPECT_EQ(s.num_allocs, int64_t(kThreads) * (kOps - kOps / 3));
  EXPECT_GT(s.peak_allocated_bytes, 0);
}

TEST(CpuCachingAllocator, ReusesFreedBlocksWithoutNewMallocs) {
  auto alloc = make_cpu_caching_allocator();
  std::vector<void*> first;
  for (size_t n : {size_t{100}, size_t{5000}, size_t{3} << 20}) first.push_back(alloc->allocate(n));
  for (void* p : first) alloc->deallocate(p);
  const MemoryStats after_first = alloc->stats();
  EXPECT_EQ(after_first.allocated_bytes, 0);
  EXPECT_GT(after_first.reserved_bytes, 0);  // kept for the next step
  // The same sizes again, as the next training step asks for them.
  std::vector<void*> second;
  for (size_t n : {size_t{100}, size_t{5000}, size_t{3} << 20}) {
    void* p = alloc->allocate(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << "size " << n;
    std::memset(p, 0x5a, n);
    second.push_back(p);
  }
  const MemoryStats s = alloc->stats();
  EXPECT_EQ(s.device_mallocs, after_first.device_mallocs);
  EXPECT_EQ(s.cache_hits - after_first.cache_hits, 3);
  for (void* p : second) alloc->deallocate(p);
  alloc->empty_cache();
  EXPECT_EQ(alloc->stats().reserved_bytes, 0);
}

TEST(CpuCachingAllocator, BlocksAre64ByteAlignedAndDistinct) {
  auto alloc = make_cpu_caching_allocator();
  std::set<void*> seen;
  std::vector<void*> ptrs;
  for (size_t n : {size_t{0}, size_t{0}, size_t{1}, size_t{63}, size_t{65}, size_t{4097}, (size_t{1} << 20) + 3}) {
    void* p = alloc->allocate(n);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << "size " << n;
    EXPECT_TRUE(seen.insert(p).second) << "pointer handed out twice";
    ptrs.push_back(p);
  }
  for (void* p : ptrs) alloc->deallocate(p);
  int not_ours = 0;
  EXPECT_THROW(alloc->deallocate(&not_ours), Error);
}

}  // namespace
}  // namespace anvil
