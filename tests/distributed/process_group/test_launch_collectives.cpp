// Real multi-process jobs on loopback, started through anvil-run: every
// collective and dtype against hand-computed values, and how the runtime
// fails (mismatched arguments, a dead peer, a silent peer).
#include <gtest/gtest.h>

#include <random>

#include "harness.h"

namespace {

using anvil::test::run_ranks;
using anvil::test::RunOptions;
using anvil::test::RunResult;

using anvil::test::contains;

std::string random_seed() { return std::to_string(std::random_device{}() % 100000); }

void expect_every_rank_says(const RunResult& r, int nproc, const std::string& what) {
  for (int rank = 0; rank < nproc; ++rank) {
    bool found = false;
    for (const auto& line : r.lines_of(rank)) found = found || contains(line, what);
    EXPECT_TRUE(found) << "rank " << rank << " never printed '" << what << "'\n" << r.output;
  }
}

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, EveryOpEveryDtypeSyncAndAsync) {
  const int nproc = GetParam();
  std::string seed = random_seed();
  RunResult r = run_ranks(nproc, "collectives", {"collectives", "--seed", seed}, {.timeout = std::chrono::seconds(90)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << "seed " << seed << "\n" << r.output;
  expect_every_rank_says(r, nproc, "OK collectives");
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(2, 3, 4));

TEST(Failures, MismatchedSizeIsReportedOnEveryRank) {
  RunResult r = run_ranks(3, "collectives", {"mismatch_size"}, {.timeout = std::chrono::seconds(60)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_every_rank_says(r, 3, "the ranks disagree");
  expect_every_rank_says(r, 3, "OK mismatch");
}

TEST(Failures, MismatchedDtypeIsReportedOnEveryRank) {
  RunResult r = run_ranks(2, "collectives", {"mismatch_dtype"}, {.timeout = std::chrono::seconds(60)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_every_rank_says(r, 2, "rank 0: all_reduce of float32");
  expect_every_rank_says(r, 2, "OK mismatch");
}

TEST(Failures, KilledRankMakesTheOthersFailWithinTheTimeout) {
  // --keep-going: the launcher must not stop the survivors, so we see how
  // the process group itself reports the dead peer.
  RunResult r = run_ranks(3, "collectives", {"die", "--timeout-ms", "4000"},
                          {.launcher_args = {"--keep-going"}, .timeout = std::chrono::seconds(60)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 128 + 9) << "the launcher reports the killed rank's signal\n" << r.output;
  EXPECT_TRUE(contains(r.output, "rank 1 was killed by signal 9")) << r.output;
  for (int rank : {0, 2}) {
    bool ok = false;
    for (const auto& line : r.lines_of(rank)) ok = ok || contains(line, "OK survivor");
    EXPECT_TRUE(ok) << "rank " << rank << " did not fail cleanly\n" << r.output;
  }
}

TEST(Failures, SilentRankMakesTheOthersTimeOut) {
  RunResult r = run_ranks(3, "collectives", {"silent", "--timeout-ms", "2000"}, {.timeout = std::chrono::seconds(60)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank : {0, 2}) {
    bool ok = false;
    for (const auto& line : r.lines_of(rank)) ok = ok || contains(line, "OK timed out");
    EXPECT_TRUE(ok) << r.output;
  }
  EXPECT_TRUE(contains(r.output, "2000 ms")) << "the error names the timeout\n" << r.output;
}

}  // namespace
