// Out of memory on the CPU, made catchable by a cap on the CPU allocator,
// then training goes on at a batch the finder chose (out_of_memory_scenario.h).
#include <gtest/gtest.h>

#include "tests/nn/train/out_of_memory_scenario.h"

namespace anvil {
namespace {

TEST(OutOfMemory, AFitThatDoesNotFitFailsWithStatsAndTrainingContinuesAtTheFoundBatch) {
  // Batch 1024 x 2048 floats is 8 MiB per activation; the cap is a few MiB over what batch 16 needs.
  testing::run_out_of_memory_scenario(
      {.device = Device::cpu(), .hidden = 2048, .samples = 1024, .too_big = 1024, .probe = 16, .cap_factor = 3.0});
}

TEST(OutOfMemory, TheCpuCapRefusesPastItAndIsRemovable) {
  empty_cache(Device::cpu());
  const int64_t held = memory_stats(Device::cpu()).reserved_bytes;
  {
    // 32 MiB over what is held: room for a 4 MiB tensor's 20 MiB cache segment.
    testing::MemoryLimitGuard guard(Device::cpu(), static_cast<size_t>(held) + (32 << 20));
    EXPECT_EQ(memory_limit(Device::cpu()), static_cast<size_t>(held) + (32 << 20));
    Tensor fits = empty({1 << 20});  // 4 MiB
    try {
      Tensor too_much = empty({16 << 20});  // 64 MiB
      FAIL() << "a 64 MiB tensor passed a 32 MiB cap";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("out of memory"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(memory_limit(Device::cpu()), 0u);
  Tensor now_fits = empty({16 << 20});
  EXPECT_EQ(now_fits.numel(), 16 << 20);
}

TEST(OutOfMemory, TheFinderSearchesOnTheCpuUnderACap) {
  empty_cache(Device::cpu());
  const int64_t held = memory_stats(Device::cpu()).reserved_bytes;
  testing::MemoryLimitGuard guard(Device::cpu(), static_cast<size_t>(held) + (32 << 20));
  int tries = 0;
  // Each sample takes 1 MiB: batches of at most 32 fit under the 32 MiB cap.
  const int64_t found = nn::train::find_max_batch_size(
      [&](int64_t b) {
        ++tries;
        Tensor t = empty({b, 256 * 1024});
      },
      Device::cpu(), {.start = 1, .max = 1024});
  EXPECT_GT(tries, 1);
  EXPECT_GE(found, 8);
  EXPECT_LE(found, 32);
}

}  // namespace
}  // namespace anvil
