// Ring all-reduce, DDP and ZeRO-1 across real processes started by anvil-run
// (the thread-based tests beside this file cover the details; these check the
// same things hold between processes). Worker: workers/data_parallel.cpp.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "harness.h"

namespace {

using anvil::test::run_ranks;
using anvil::test::RunResult;

void expect_ok(int nproc, const std::string& mode) {
  const std::string seed = std::to_string(std::random_device{}() % 100000);
  RunResult r = run_ranks(nproc, "data_parallel", {mode, "--seed", seed}, {.timeout = std::chrono::seconds(120)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << "seed " << seed << "\n" << r.output;
  for (int rank = 0; rank < nproc; ++rank) {
    bool ok = false;
    for (const auto& line : r.lines_of(rank)) ok = ok || line.find("OK " + mode) != std::string::npos;
    EXPECT_TRUE(ok) << "rank " << rank << " did not finish '" << mode << "'\n" << r.output;
  }
}

class DataParallelProcesses : public ::testing::TestWithParam<int> {};

TEST_P(DataParallelProcesses, RingMatchesBackend) { expect_ok(GetParam(), "ring"); }
TEST_P(DataParallelProcesses, DDPMatchesOneProcess) { expect_ok(GetParam(), "ddp"); }
TEST_P(DataParallelProcesses, ZeroMatchesAdamW) { expect_ok(GetParam(), "zero"); }

INSTANTIATE_TEST_SUITE_P(Ranks, DataParallelProcesses, ::testing::Values(2, 3, 4));

}  // namespace
