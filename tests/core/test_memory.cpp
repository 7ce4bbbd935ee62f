// memory_stats / empty_cache for CPU tensors: the CPU backend's allocator
// caches blocks (allocator.h), so a training step's second round of tensors
// costs no new host allocations.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "core/memory.h"
#include "core/ops.h"

namespace anvil {
namespace {

bool cpu_caching_disabled() {
#if defined(__SANITIZE_ADDRESS__)
  return true;  // sanitizer builds use the plain allocator on purpose
#else
  const char* env = std::getenv("ANVIL_CPU_CACHING_ALLOCATOR");
  return env != nullptr && std::strcmp(env, "0") == 0;
#endif
}

TEST(CpuMemory, SecondRoundOfSameSizedTensorsIsServedFromTheCache) {
  if (cpu_caching_disabled()) GTEST_SKIP() << "the CPU caching allocator is off in this build or environment";
  { Tensor warm = randn({257, 129}); }  // the first block of this size comes from the host
  const MemoryStats before = memory_stats(Device::cpu());
  for (int step = 0; step < 3; ++step) {
    Tensor a = randn({257, 129});
    Tensor b = (a + a).sum();
    EXPECT_EQ(b.numel(), 1);
  }
  const MemoryStats after = memory_stats(Device::cpu());
  EXPECT_EQ(after.device_mallocs, before.device_mallocs);
  EXPECT_GE(after.cache_hits - before.cache_hits, 6);
  EXPECT_GE(after.reserved_bytes, after.allocated_bytes);
}

TEST(CpuMemory, EmptyCacheGivesUnusedBlocksBack) {
  if (cpu_caching_disabled()) GTEST_SKIP() << "the CPU caching allocator is off in this build or environment";
  { Tensor big = randn({1 << 22}); }  // 16 MiB, its own segment
  const int64_t cached = memory_stats(Device::cpu()).reserved_bytes;
  empty_cache(Device::cpu());
  const MemoryStats after = memory_stats(Device::cpu());
  EXPECT_LE(after.reserved_bytes, cached - (int64_t{1} << 24));
  EXPECT_GE(after.reserved_bytes, after.allocated_bytes);
}

}  // namespace
}  // namespace anvil
