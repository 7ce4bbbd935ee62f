// The NCCL process group on CUDA tensors across real processes started by
// anvil-run (worker: workers/nccl.cpp). In the emulated-GPU build
// (./test.sh --emulated-gpu) this is the emulated NCCL over unix sockets
// (kernels/cuda/emulator/nccl); with real GPUs, NCCL itself, one GPU per
// rank. Elsewhere the tests skip with the reason.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "harness.h"
#include "nccl_ranks.h"

namespace {

using anvil::test::contains;
using anvil::test::emulated_gpu;
using anvil::test::run_ranks;
using anvil::test::RunOptions;
using anvil::test::RunResult;

std::string cannot_run(int nproc) { return anvil::test::why_nccl_ranks_cannot_run(nproc); }

RunResult run(int nproc, const std::string& mode, RunOptions options = {}) {
  const std::string seed = std::to_string(std::random_device{}() % 100000);
  options.timeout = std::chrono::seconds(120);
  RunResult r = run_ranks(nproc, "nccl", {mode, "--seed", seed}, options);
  r.output = "seed " + seed + "\n" + r.output;
  return r;
}

void expect_every_rank_says(const RunResult& r, int nproc, const std::string& what) {
  for (int rank = 0; rank < nproc; ++rank) {
    bool found = false;
    for (const auto& line : r.lines_of(rank)) found = found || contains(line, what);
    EXPECT_TRUE(found) << "rank " << rank << " never printed '" << what << "'\n" << r.output;
  }
}

void expect_ok(int nproc, const std::string& mode) {
  if (std::string why = cannot_run(nproc); !why.empty()) GTEST_SKIP() << why;
  RunResult r = run(nproc, mode);
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_every_rank_says(r, nproc, "OK " + mode);
}

class NcclProcesses : public ::testing::TestWithParam<int> {};

TEST_P(NcclProcesses, EveryCollectiveAndDtypeMatchesGloo) { expect_ok(GetParam(), "collectives"); }
TEST_P(NcclProcesses, BatchIsendIrecvRingAndEveryPeer) { expect_ok(GetParam(), "batch_ring"); }
TEST_P(NcclProcesses, RingAllReduceOnCudaTensors) { expect_ok(GetParam(), "ring"); }
TEST_P(NcclProcesses, DDPOnCudaMatchesOneProcess) { expect_ok(GetParam(), "ddp"); }
TEST_P(NcclProcesses, ZeroOnCudaMatchesAdamW) { expect_ok(GetParam(), "zero"); }

INSTANTIATE_TEST_SUITE_P(Ranks, NcclProcesses, ::testing::Values(2, 4));

TEST(NcclSubgroups, EachSubgroupHasItsOwnCommunicator) { expect_ok(4, "subgroups"); }

// The pattern issue 16 found: each rank sends, then receives, outside a
// group. NCCL's send holds the stream until the peer's recv runs, which is
// queued behind the peer's own send: a deadlock. It must end in an error
// that says so (the emulator's watchdog, 1 s here), not a hang.
TEST(NcclDeadlock, UngroupedSendThenRecvOnBothRanksIsReported) {
  if (std::string why = cannot_run(2); !why.empty()) GTEST_SKIP() << why;
  if (!emulated_gpu()) GTEST_SKIP() << "on real NCCL this hangs until the group's timeout (60 s); run on the emulator";
  RunResult r = run(2, "deadlock", {.env = {{"ANVIL_EMU_NCCL_TIMEOUT", "1"}}});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_every_rank_says(r, 2, "CAUGHT: ");
  expect_every_rank_says(r, 2, "OK deadlock");
  // The rank whose watchdog fires first names the deadlock; the other may
  // instead see it close its connection.
  EXPECT_TRUE(contains(r.output, "ncclSend of 8 float32 to rank")) << r.output;
  EXPECT_TRUE(contains(r.output, "looks like a deadlock of ungrouped send/recv")) << r.output;
  EXPECT_TRUE(contains(r.output, "ncclGroupStart/ncclGroupEnd (anvil: batch_isend_irecv)")) << r.output;
}

TEST(NcclDeadlock, TheSameExchangeBatchedCompletes) {
  if (std::string why = cannot_run(2); !why.empty()) GTEST_SKIP() << why;
  RunResult r = run(2, "batched", {.env = {{"ANVIL_EMU_NCCL_TIMEOUT", "20"}}});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  expect_every_rank_says(r, 2, "OK batched");
}

}  // namespace
