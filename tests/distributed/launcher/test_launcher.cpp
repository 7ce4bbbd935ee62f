// anvil-run itself: the environment it sets, output prefixes, exit status
// propagation, stopping the other ranks, usage errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "harness.h"

namespace {

using anvil::test::bin_path;
using anvil::test::run_command;
using anvil::test::run_ranks;
using anvil::test::RunResult;

using anvil::test::contains;

TEST(Launcher, PrefixesEveryLineOfEveryRank) {
  RunResult r = run_ranks(3, "collectives", {"print"}, {.timeout = std::chrono::seconds(30)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < 3; ++rank) {
    auto lines = r.lines_of(rank);
    std::string me = "rank " + std::to_string(rank);
    int hello = 0, warn = 0, tail = 0;
    for (const auto& l : lines) {
      hello += l.rfind("hello from " + me + " line", 0) == 0;
      warn += l.rfind("warning from " + me + " line", 0) == 0;
      tail += l == "no newline at the end from " + me;
      EXPECT_TRUE(contains(l, me)) << "a line under [" << me << "] came from another rank: " << l;
    }
    EXPECT_EQ(hello, 3) << r.output;
    EXPECT_EQ(warn, 3) << r.output;
    EXPECT_EQ(tail, 1) << "a last line without a newline is still relayed\n" << r.output;
  }
}

TEST(Launcher, FailingRankStatusIsPropagatedAndOthersAreStopped) {
  // Rank 2 exits with 7 while the others wait in a barrier with a 60 s
  // timeout: the launcher has to stop them (else the harness times out).
  RunResult r = run_ranks(3, "collectives", {"exit", "7", "2", "--timeout-ms", "60000"},
                          {.launcher_args = {"--kill-grace", "2"}, .timeout = std::chrono::seconds(40)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 7) << r.output;
  EXPECT_TRUE(contains(r.output, "rank 2 exited with status 7; stopping the other ranks")) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 2] exiting with 7")) << r.output;
}

TEST(Launcher, SetsTheEnvironment) {
  RunResult r =
      run_command({bin_path("anvil-run"), "--nproc-per-node", "2", "--master-port", "23456", "--", "/bin/sh", "-c",
                   "echo R=$RANK L=$LOCAL_RANK W=$WORLD_SIZE LW=$LOCAL_WORLD_SIZE "
                   "A=$MASTER_ADDR P=$MASTER_PORT"},
                  {.timeout = std::chrono::seconds(20)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 0] R=0 L=0 W=2 LW=2 A=127.0.0.1 P=23456")) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 1] R=1 L=1 W=2 LW=2 A=127.0.0.1 P=23456")) << r.output;
}

// Without OMP_NUM_THREADS every rank would use every core; the launcher
// splits the cores between the node's ranks, and a user's choice wins.
TEST(Launcher, SharesTheCoresBetweenRanksUnlessOmpNumThreadsIsSet) {
  const std::string print = "echo T=$OMP_NUM_THREADS";
  RunResult unset = run_command({"/usr/bin/env", "-u", "OMP_NUM_THREADS", bin_path("anvil-run"), "--nproc-per-node",
                                 "2", "--", "/bin/sh", "-c", print},
                                {.timeout = std::chrono::seconds(20)});
  ASSERT_FALSE(unset.timed_out) << unset.output;
  EXPECT_EQ(unset.exit_code, 0) << unset.output;
  const unsigned share = std::max(1u, std::max(1u, std::thread::hardware_concurrency()) / 2);
  EXPECT_TRUE(contains(unset.output, "[rank 0] T=" + std::to_string(share))) << unset.output;
  EXPECT_TRUE(contains(unset.output, "OMP_NUM_THREADS is not set")) << unset.output;

  RunResult chosen = run_command({"/usr/bin/env", "OMP_NUM_THREADS=3", bin_path("anvil-run"), "--nproc-per-node", "2",
                                  "--", "/bin/sh", "-c", print},
                                 {.timeout = std::chrono::seconds(20)});
  ASSERT_FALSE(chosen.timed_out) << chosen.output;
  EXPECT_TRUE(contains(chosen.output, "[rank 1] T=3")) << chosen.output;
  EXPECT_FALSE(contains(chosen.output, "OMP_NUM_THREADS is not set")) << chosen.output;
}

TEST(Launcher, MultiNodeRanksAreOffsetByNodeRank) {
  RunResult r =
      run_command({bin_path("anvil-run"), "--nproc-per-node", "2", "--nnodes", "3", "--node-rank", "1", "--master-addr",
                   "10.0.0.1", "--master-port", "29500", "/bin/sh", "-c", "echo R=$RANK L=$LOCAL_RANK W=$WORLD_SIZE"},
                  {.timeout = std::chrono::seconds(20)});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 2] R=2 L=0 W=6")) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 3] R=3 L=1 W=6")) << r.output;
}

TEST(Launcher, KilledBySignalGives128PlusSignal) {
  RunResult r = run_command({bin_path("anvil-run"), "--nproc-per-node", "2", "--", "/bin/sh", "-c",
                             "if [ $RANK = 1 ]; then kill -9 $$; fi; exec sleep 30"},
                            {.timeout = std::chrono::seconds(30)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 137) << r.output;
  EXPECT_TRUE(contains(r.output, "rank 1 was killed by signal 9")) << r.output;
}

TEST(Launcher, ForwardsSigtermToTheRanks) {
  // Rank 0 sends SIGTERM to the launcher (its parent); both ranks would
  // otherwise sleep past the harness's time bound.
  RunResult r = run_command({bin_path("anvil-run"), "--nproc-per-node", "2", "--", "/bin/sh", "-c",
                             "if [ $RANK = 0 ]; then kill -TERM $PPID; fi; exec sleep 60"},
                            {.timeout = std::chrono::seconds(30)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 128 + 15) << r.output;
  EXPECT_TRUE(contains(r.output, "got Terminated; forwarding it to the ranks")) << r.output;
}

TEST(Launcher, UsageErrors) {
  RunResult r = run_command({bin_path("anvil-run"), "--nproc-per-node", "two", "prog"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "--nproc-per-node expects an integer")) << r.output;
  r = run_command({bin_path("anvil-run"), "--nproc-per-node", "2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.output, "no program given")) << r.output;
  r = run_command({bin_path("anvil-run"), "--nproc-per-node", "1", "/nonexistent/program"});
  EXPECT_EQ(r.exit_code, 127) << r.output;
  EXPECT_TRUE(contains(r.output, "cannot execute '/nonexistent/program'")) << r.output;
}

}  // namespace

namespace {

// Rank 1 fails on the first attempt only; --max-restarts 2 starts every rank
// again, each seeing its restart count (torchrun's variable).
TEST(LauncherRestarts, RestartsAllRanksWithTheRestartCount) {
  RunResult r = run_command({bin_path("anvil-run"), "--nproc-per-node", "2", "--max-restarts", "2", "--kill-grace", "2",
                             "--", "/bin/sh", "-c",
                             "echo attempt=$TORCHELASTIC_RESTART_COUNT of=$TORCHELASTIC_MAX_RESTARTS; "
                             "if [ $RANK = 1 ] && [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then exit 3; fi; "
                             "if [ $RANK = 0 ] && [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then sleep 30; fi"},
                            {.timeout = std::chrono::seconds(40)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "restarting all ranks (restart 1 of 2)")) << r.output;
  EXPECT_FALSE(contains(r.output, "restart 2 of 2")) << r.output;
  // Rank 0 may be stopped before it prints on the first attempt.
  EXPECT_TRUE(contains(r.output, "[rank 1] attempt=0 of=2")) << r.output;
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_TRUE(contains(r.output, "[rank " + std::to_string(rank) + "] attempt=1 of=2")) << r.output;
}

TEST(LauncherRestarts, GivesUpAfterMaxRestartsWithTheFailure) {
  RunResult r = run_command({bin_path("anvil-run"), "--nproc-per-node", "1", "--max-restarts", "2", "--", "/bin/sh",
                             "-c", "echo attempt=$TORCHELASTIC_RESTART_COUNT; exit 5"},
                            {.timeout = std::chrono::seconds(30)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 5) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 0] attempt=2")) << r.output;
  EXPECT_FALSE(contains(r.output, "attempt=3")) << r.output;
  EXPECT_TRUE(contains(r.output, "giving up after 2 restart(s)")) << r.output;
}

}  // namespace

namespace {

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Rank 1 crashes mid-epoch (step 9 of 24, in the second epoch); anvil-run
// restarts both ranks and the Trainer resumes each from its last checkpoint:
// the final parameters equal those of a run never interrupted.
TEST(LauncherRestarts, TrainerResumesToTheSameFinalParameters) {
  auto base = std::filesystem::temp_directory_path() / ("anvil_elastic_" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  auto crashed = base / "crashed", clean = base / "clean";
  std::filesystem::create_directories(crashed);
  std::filesystem::create_directories(clean);
  RunResult r = run_ranks(2, "elastic_train", {crashed.string(), "9"},
                          {.launcher_args = {"--max-restarts", "1", "--kill-grace", "5"},
                           .env = {{"OMP_NUM_THREADS", "1"}},
                           .timeout = std::chrono::seconds(60)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 1] aborting at step 9")) << r.output;
  EXPECT_TRUE(contains(r.output, "restarting all ranks (restart 1 of 1)")) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 1] restart 1: resuming from")) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 1] OK finished at step 24")) << r.output;
  RunResult u = run_ranks(2, "elastic_train", {clean.string(), "0"},
                          {.env = {{"OMP_NUM_THREADS", "1"}}, .timeout = std::chrono::seconds(60)});
  ASSERT_FALSE(u.timed_out) << u.output;
  EXPECT_EQ(u.exit_code, 0) << u.output;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string name = "final_rank" + std::to_string(rank) + ".bin";
    const std::string a = file_bytes(crashed / name), b = file_bytes(clean / name);
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_TRUE(a == b) << "rank " << rank << ": the resumed run ended elsewhere than the uninterrupted one";
  }
  std::filesystem::remove_all(base);
}

}  // namespace
