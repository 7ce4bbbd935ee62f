// The cost model of the emulated GPU's memory counters, against the access
// rules NVIDIA documents for compute capability 9.0: 32-byte sectors for
// global memory, 32 four-byte banks for shared memory (8- and 16-byte
// accesses served in half- and quarter-warp phases).
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/emulator/transactions.h"

namespace anvil::emulator {
namespace {

// A warp whose lane l accesses base + l * stride, `bytes` each (lanes active: the first `active`).
std::vector<LaneAccess> warp(uintptr_t base, uintptr_t stride, unsigned bytes, unsigned active = 32) {
  std::vector<LaneAccess> lanes;
  for (unsigned l = 0; l < active; ++l) lanes.push_back({l, base + l * stride, bytes});
  return lanes;
}

TEST(GlobalRequestCost, CoalescedFloatsCostFourSectors) {
  const SectorCost c = global_request_cost(warp(4096, 4, 4));
  EXPECT_EQ(c.sectors, 4u);
  EXPECT_EQ(c.ideal_sectors, 4u);
}

TEST(GlobalRequestCost, AnUnalignedStartCostsOneMoreSector) {
  const SectorCost c = global_request_cost(warp(4096 + 4, 4, 4));
  EXPECT_EQ(c.sectors, 5u);
  EXPECT_EQ(c.ideal_sectors, 4u);
}

TEST(GlobalRequestCost, StridedAccessesWasteSectors) {
  EXPECT_EQ(global_request_cost(warp(0, 8, 4)).sectors, 8u);  // every other float
  EXPECT_EQ(global_request_cost(warp(0, 128, 4)).sectors, 32u);  // a column of a 32-float-wide matrix
  EXPECT_EQ(global_request_cost(warp(0, 128, 4)).ideal_sectors, 4u);
}

TEST(GlobalRequestCost, BroadcastAndVectorAccesses) {
  const SectorCost same = global_request_cost(warp(64, 0, 4));  // every lane reads one float
  EXPECT_EQ(same.sectors, 1u);
  EXPECT_EQ(same.ideal_sectors, 1u);
  const SectorCost f4 = global_request_cost(warp(0, 16, 16));  // float4 per lane: 512 bytes
  EXPECT_EQ(f4.sectors, 16u);
  EXPECT_EQ(f4.ideal_sectors, 16u);
  const SectorCost halves = global_request_cost(warp(0, 2, 2));  // 64 bytes of bf16
  EXPECT_EQ(halves.sectors, 2u);
  const SectorCost partial = global_request_cost(warp(0, 4, 4, 5));  // a tail of 5 lanes
  EXPECT_EQ(partial.sectors, 1u);
}

TEST(SharedRequestCost, ConsecutiveWordsAreConflictFree) {
  const BankCost c = shared_request_cost(warp(0, 4, 4));
  EXPECT_EQ(c.wavefronts, 1u);
  EXPECT_EQ(c.ideal_wavefronts, 1u);
}

TEST(SharedRequestCost, StridesSharingABankConflict) {
  EXPECT_EQ(shared_request_cost(warp(0, 8, 4)).wavefronts, 2u);  // stride 2 words: 2-way
  EXPECT_EQ(shared_request_cost(warp(0, 128, 4)).wavefronts, 32u);  // a column of a 32-wide tile: 32-way
  EXPECT_EQ(shared_request_cost(warp(0, 132, 4)).wavefronts, 1u);  // the same column of a tile padded to 33
  EXPECT_EQ(shared_request_cost(warp(0, 12, 4)).wavefronts, 1u);  // odd strides are conflict-free
}

TEST(SharedRequestCost, OneWordReadByEveryLaneIsABroadcast) {
  EXPECT_EQ(shared_request_cost(warp(256, 0, 4)).wavefronts, 1u);
}

TEST(SharedRequestCost, WideAccessesGoInPhases) {
  const BankCost d = shared_request_cost(warp(0, 8, 8));  // doubles, consecutive: two half-warp phases
  EXPECT_EQ(d.wavefronts, 2u);
  EXPECT_EQ(d.ideal_wavefronts, 2u);
  const BankCost f4 = shared_request_cost(warp(0, 16, 16));  // float4s: four quarter-warp phases
  EXPECT_EQ(f4.wavefronts, 4u);
  EXPECT_EQ(f4.ideal_wavefronts, 4u);
  // float4s at a stride of 32 bytes: each phase's 8 lanes cover 8 words of 16 banks twice.
  EXPECT_EQ(shared_request_cost(warp(0, 32, 16)).wavefronts, 8u);
}

}  // namespace
}  // namespace anvil::emulator
