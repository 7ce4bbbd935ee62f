// The memory-efficiency targets of the CUDA kernels, held on the emulated
// GPU's counters (kernels/cuda/emulator/profile.h) at the kernel report's
// families (bench/kernel_report): every memory-bound kernel on its contiguous
// path within 10% of the ideal sectors per request and free of shared-memory
// bank conflicts; the GEMM ladder's rungs showing the story their header
// comments tell.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "bench/kernel_report/kernel_families.h"

namespace anvil::kernel_report {
namespace {

using emulator::KernelProfile;

constexpr int64_t kElements = 65536;
constexpr int64_t kGemmSize = 128;

const std::vector<KernelFamily>& families() {
  static const std::vector<KernelFamily> all = kernel_families(kElements, kGemmSize);
  return all;
}

std::string describe(const KernelFamily& f, const KernelProfile& p) {
  return f.name + " " + f.shape + " " + f.dtype + ": kernel " + p.kernel + "\n" + emulator::format_profiles({p}, true);
}

TEST(MemoryEfficiency, MemoryBoundKernelsTouchOnlyTheSectorsTheyNeed) {
  int checked = 0;
  for (const KernelFamily& f : families()) {
    if (f.access != Access::Contiguous) continue;
    const std::vector<KernelProfile> launches = profile_family(f);
    double touched = 0;
    for (const KernelProfile& p : launches) {
      touched += static_cast<double>(p.unique_bytes_read + p.unique_bytes_written);
      if (p.totals.global_requests() == 0) continue;
      ++checked;
      EXPECT_GE(p.totals.sector_efficiency(), 0.9) << describe(f, p);
      EXPECT_LE(p.totals.bank_conflict_ways(), 1.0) << describe(f, p);
    }
    // Nothing read or written twice over: the distinct bytes are the compulsory ones.
    if (!launches.empty()) {
      EXPECT_LE(touched, 1.1 * f.compulsory_bytes) << f.name << " " << f.dtype;
    }
  }
  EXPECT_GE(checked, 25);  // every family ran and launched kernels
}

TEST(MemoryEfficiency, TheGemmLadderTellsItsStory) {
  std::map<std::string, emulator::MemoryCounters> rung;
  for (const KernelFamily& f : families()) {
    if (f.access != Access::Gemm) continue;
    const std::vector<KernelProfile> launches = profile_family(f);
    ASSERT_EQ(launches.size(), 1u) << f.name;
    rung[f.name.substr(5, 2)] = launches[0].totals;
  }
  ASSERT_EQ(rung.size(), 7u);
  // 01: threads of a warp walk down rows of A and C: uncoalesced. 02: along rows: coalesced.
  EXPECT_LT(rung["01"].sector_efficiency(), 0.25);
  EXPECT_GE(rung["02"].sector_efficiency(), 0.99);
  EXPECT_GT(rung["01"].sectors_per_request(), 4 * rung["02"].sectors_per_request());
  // 03, 04: shared tiles without conflicts.
  EXPECT_DOUBLE_EQ(rung["03"].bank_conflict_ways(), 1.0);
  EXPECT_DOUBLE_EQ(rung["04"].bank_conflict_ways(), 1.0);
  // 05 reads A down a column of its tile (2-way conflicted); 06 keeps 2-way
  // conflicts on its B reads and transposing A stores; 07 is conflict-free
  // (its A store swizzled).
  EXPECT_GT(rung["05"].bank_conflict_ways(), 1.5);
  EXPECT_GT(rung["06"].bank_conflict_ways(), 1.2);
  EXPECT_DOUBLE_EQ(rung["07"].bank_conflict_ways(), 1.0);
  // 06 and 07 load float4s: 16 sectors for a warp's 512 bytes.
  EXPECT_DOUBLE_EQ(rung["06"].load_sectors / static_cast<double>(rung["06"].load_requests), 16.0);
  EXPECT_DOUBLE_EQ(rung["07"].sector_efficiency(), 1.0);
}

}  // namespace
}  // namespace anvil::kernel_report
