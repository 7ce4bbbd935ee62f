#include <gtest/gtest.h>

#include "core/ops.h"
#include "nn/layers/layers.h"
#include "nn/train/batch_size_finder.h"

namespace anvil {
namespace {

using namespace anvil::nn;

// A try that "runs out of memory" above `limit`, recording what was tried.
struct FakeDevice {
  explicit FakeDevice(int64_t l) : limit(l) {}
  int64_t limit;
  std::vector<int64_t> tried;
  int cache_empties = 0;
  void operator()(int64_t b) {
    tried.push_back(b);
    if (b > limit) fail("CachingAllocator: out of memory: tried to allocate ", b * 1000, " bytes");
  }
};

TEST(BatchSizeFinder, FindsTheLargestBatchThatFits) {
  for (int64_t limit : {1, 2, 3, 7, 8, 9, 100, 511, 512, 513, 1000}) {
    FakeDevice dev{limit};
    int64_t found = train::search_max_batch_size([&](int64_t b) { dev(b); }, {.start = 1, .max = 4096},
                                                 [&] { ++dev.cache_empties; });
    EXPECT_EQ(found, limit) << "limit " << limit;
    // Doubling then bisection: O(log) tries, and the cache is emptied after every failure.
    EXPECT_LE(dev.tried.size(), 25u);
    int64_t failures = 0;
    for (int64_t b : dev.tried) failures += b > limit;
    EXPECT_EQ(dev.cache_empties, failures);
  }
}

TEST(BatchSizeFinder, StopsAtMaxAndStartsAtStart) {
  FakeDevice dev{1 << 20};
  EXPECT_EQ(train::search_max_batch_size([&](int64_t b) { dev(b); }, {.start = 3, .max = 50}), 50);
  EXPECT_EQ(dev.tried, (std::vector<int64_t>{3, 6, 12, 24, 48, 50}));

  FakeDevice small{37};
  EXPECT_EQ(train::search_max_batch_size([&](int64_t b) { small(b); }, {.start = 5, .max = 1000}), 37);
  EXPECT_EQ(small.tried.front(), 5);
}

TEST(BatchSizeFinder, ErrorsWhenStartDoesNotFitAndPassesOtherErrorsThrough) {
  FakeDevice dev{3};
  EXPECT_THROW(train::search_max_batch_size([&](int64_t b) { dev(b); }, {.start = 4, .max = 64}), Error);
  auto shape_error = [](int64_t b) {
    if (b > 2) fail("linear: shapes [", b, ", 3] and [4, 5] do not match");
  };
  try {
    train::search_max_batch_size(shape_error, {.start = 1, .max = 64});
    FAIL() << "expected the shape error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do not match"), std::string::npos);
  }
  EXPECT_THROW(train::search_max_batch_size(shape_error, {.start = 8, .max = 4}), Error);
}

TEST(BatchSizeFinder, ReturnsMaxOnCpuWithoutTrying) {
  auto model = std::make_shared<Linear>(4, 2);
  EXPECT_EQ(train::find_max_batch_size(*model, {4}, Device::cpu(), {.start = 2, .max = 300}), 300);
  int tries = 0;
  EXPECT_EQ(train::find_max_batch_size([&](int64_t) { ++tries; }, Device::cpu(), {.max = 77}), 77);
  EXPECT_EQ(tries, 0);
}

TEST(BatchSizeFinder, RecognisesOutOfMemoryMessages) {
  EXPECT_TRUE(train::is_out_of_memory(Error("CUDA caching allocator: out of memory (tried 2 GiB)")));
  EXPECT_FALSE(train::is_out_of_memory(Error("matmul: shapes differ")));
}

}  // namespace
}  // namespace anvil
