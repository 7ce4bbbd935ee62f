// Out of memory on a GPU under a cap on its caching allocator, then training
// goes on at a batch the finder chose (out_of_memory_scenario.h). CI runs it
// on the emulated GPU; the cap makes it the same test on a real one.
#include <gtest/gtest.h>

#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/nn/train/out_of_memory_scenario.h"

namespace anvil {
namespace {

TEST(CudaOutOfMemory, AFitThatDoesNotFitFailsWithStatsAndTrainingContinuesAtTheFoundBatch) {
  ANVIL_SKIP_WITHOUT_GPU();
  // Batch 4096 x 256 floats is 4 MiB per activation: each takes a 20 MiB
  // segment, past a cap a few small (2 MiB) segments over what batch 8 needs.
  testing::run_out_of_memory_scenario({.device = Device::cuda(0),
                                       .hidden = 256,
                                       .samples = 4096,
                                       .too_big = 4096,
                                       .probe = 8,
                                       .cap_factor = 3.0,
                                       .epochs = 1});
}

TEST(CudaOutOfMemory, TheErrorCarriesTheStatsAndTheCacheIsFreed) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Device gpu = Device::cuda(0);
  empty_cache(gpu);
  const int64_t held = memory_stats(gpu).reserved_bytes;
  testing::MemoryLimitGuard guard(gpu, static_cast<size_t>(held) + (24 << 20));
  {
    Tensor cached = empty({4 << 20}, TensorOptions().device(gpu));  // 16 MiB, freed into the cache below
  }
  EXPECT_GE(memory_stats(gpu).reserved_bytes - memory_stats(gpu).allocated_bytes, 16 << 20);
  // 32 MiB does not fit beside the cached 16 MiB, nor after the allocator gives that back.
  try {
    Tensor too_much = empty({8 << 20}, TensorOptions().device(gpu));
    FAIL() << "a 32 MiB tensor passed a 24 MiB cap";
  } catch (const Error& e) {
    const std::string m = e.what();
    for (const char* stat : {"out of memory", "allocated", "reserved", "limit", "cuda:0"})
      EXPECT_NE(m.find(stat), std::string::npos) << stat << " missing from: " << m;
  }
  const MemoryStats s = memory_stats(gpu);
  EXPECT_LT(s.reserved_bytes - s.allocated_bytes, 16 << 20) << "the cache was not freed before the error";
  EXPECT_EQ(s.limit_bytes, held + (24 << 20));
  Tensor fits = empty({4 << 20}, TensorOptions().device(gpu));  // training's next, smaller batch
  EXPECT_EQ(fits.numel(), 4 << 20);
}

}  // namespace
}  // namespace anvil
