// set_memory_limit on the caching allocator (and the plain CPU one): segments are not taken from the
// device past the cap; a request over it frees the cache, retries, then fails
// with the stats and the cap; removing the cap lets the device decide again.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/base/caching_allocator.h"
#include "core/base/error.h"

namespace anvil {
namespace {

// Plain host memory counting what the device has handed out.
class CountingDevice : public DeviceMemory {
 public:
  void* raw_alloc(size_t nbytes) override {
    ++mallocs;
    return std::malloc(nbytes);
  }
  void raw_free(void* ptr) override { std::free(ptr); }
  int mallocs = 0;
};

constexpr size_t kMiB = size_t{1} << 20;

TEST(CachingAllocatorMemoryLimit, ARequestPastTheCapFreesTheCacheThenFailsWithTheStats) {
  auto device = std::make_unique<CountingDevice>();
  CountingDevice* dev = device.get();
  CachingAllocator a(std::move(device));
  ASSERT_TRUE(a.set_memory_limit(40 * kMiB));
  EXPECT_EQ(a.memory_limit(), 40 * kMiB);
  EXPECT_EQ(a.stats().limit_bytes, static_cast<int64_t>(40 * kMiB));
  void* first = a.allocate(24 * kMiB);  // its own 24 MiB segment
  a.deallocate(first);  // cached
  EXPECT_EQ(a.stats().reserved_bytes, static_cast<int64_t>(24 * kMiB));

  // 32 MiB fits only once the cached 24 MiB segment is given back.
  void* second = a.allocate(32 * kMiB);
  EXPECT_EQ(a.stats().reserved_bytes, static_cast<int64_t>(32 * kMiB));
  EXPECT_EQ(a.stats().num_ooms, 1);

  std::string msg;
  try {
    a.allocate(16 * kMiB);  // 48 MiB > 40 MiB
  } catch (const Error& e) {
    msg = e.what();
  }
  ASSERT_FALSE(msg.empty()) << "16 MiB more passed a 40 MiB cap holding 32 MiB";
  const std::string held = std::to_string(32 * kMiB) + " bytes", cap = std::to_string(40 * kMiB) + " bytes";
  for (const std::string& part :
       {std::string("out of memory"), "allocated " + held, "reserved " + held, "limit " + cap})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  EXPECT_EQ(dev->mallocs, 2) << "the device was asked past the cap";
  EXPECT_EQ(a.stats().reserved_bytes, a.stats().allocated_bytes);

  // A smaller batch fits under the cap; without the cap, the larger one does too.
  void* smaller = a.allocate(kMiB);  // a small request: a 2 MiB segment
  a.deallocate(smaller);
  ASSERT_TRUE(a.set_memory_limit(0));
  void* larger = a.allocate(16 * kMiB);
  a.deallocate(larger);
  a.deallocate(second);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved_bytes, 0);
}

// Under a cap the 20 MiB segment a 1-10 MiB request takes counts, as under
// PyTorch's memory fraction (the device's own refusal gets a segment of the
// request's size instead: CachingAllocator.MediumRequestFallsBack...).
TEST(CachingAllocatorMemoryLimit, AMediumRequestsSegmentCountsAgainstTheCap) {
  auto device = std::make_unique<CountingDevice>();
  CachingAllocator a(std::move(device));
  ASSERT_TRUE(a.set_memory_limit(10 * kMiB));
  EXPECT_THROW(a.allocate(4 * kMiB), Error);  // a 20 MiB segment
  ASSERT_TRUE(a.set_memory_limit(24 * kMiB));
  void* fits = a.allocate(4 * kMiB);
  EXPECT_EQ(a.stats().reserved_bytes, static_cast<int64_t>(20 * kMiB));
  a.deallocate(fits);
  ASSERT_TRUE(a.set_memory_limit(0));
  a.empty_cache();
}

// The plain CPU allocator (sanitizer builds, ANVIL_CPU_CACHING_ALLOCATOR=0)
// caps what is allocated, as nothing is cached.
TEST(CpuAllocatorMemoryLimit, RefusesPastTheCapNamingIt) {
  auto a = make_cpu_allocator();
  ASSERT_TRUE(a->set_memory_limit(8 * kMiB));
  void* first = a->allocate(6 * kMiB);
  std::string msg;
  try {
    a->allocate(4 * kMiB);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("limit " + std::to_string(8 * kMiB)), std::string::npos) << msg;
  EXPECT_EQ(a->stats().allocated_bytes, static_cast<int64_t>(6 * kMiB)) << "the refused request was counted";
  EXPECT_EQ(a->stats().num_ooms, 1);
  void* second = a->allocate(2 * kMiB);  // exactly up to the cap
  a->deallocate(first);
  a->deallocate(second);
  EXPECT_EQ(a->stats().allocated_bytes, 0);
}

}  // namespace
}  // namespace anvil
