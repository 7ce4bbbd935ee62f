// Parameter-server jobs as real processes through `anvil-run --ps N`: the
// launcher's roles, sync training equal to one process, and an async job in
// which a worker aborts mid-training, is restarted alone and rejoins.
#include <gtest/gtest.h>

#include "tests/distributed/harness.h"

namespace anvil::test {
namespace {

RunResult run_ps_job(int nproc, int num_ps, const std::vector<std::string>& args,
                     const std::vector<std::string>& extra = {}) {
  RunOptions o;
  o.launcher_args = {"--ps", std::to_string(num_ps)};
  o.launcher_args.insert(o.launcher_args.end(), extra.begin(), extra.end());
  o.env = {{"OMP_NUM_THREADS", "1"}};
  o.timeout = std::chrono::seconds(60);
  return run_ranks(nproc, "parameter_server", args, o);
}

TEST(ParameterServerLaunch, SyncJobMatchesOneProcess) {
  const RunResult r = run_ps_job(5, 2, {"sync", "4"});  // 2 PS + 3 workers
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    const auto lines = r.lines_of(rank);
    ASSERT_FALSE(lines.empty()) << r.output;
    EXPECT_TRUE(contains(lines.back(), "OK ps " + std::to_string(rank) + " version 4 lost 0")) << r.output;
  }
  for (int rank = 2; rank < 5; ++rank)
    EXPECT_TRUE(contains(
        r.output, "[rank " + std::to_string(rank) + "] OK worker " + std::to_string(rank - 2) + " matches one process"))
        << r.output;
}

TEST(ParameterServerLaunch, AsyncWorkerThatDiesIsRestartedAloneAndRejoins) {
  const RunResult r = run_ps_job(4, 1, {"async", "40", "10"}, {"--max-restarts", "1"});  // 1 PS + 3 workers
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 2] dying at step 10")) << r.output;
  EXPECT_TRUE(contains(r.output, "worker rank 2 was killed by signal 6")) << r.output;
  EXPECT_TRUE(contains(r.output, "restarting it alone")) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 2] rejoined at version")) << r.output;
  for (int w = 0; w < 3; ++w) EXPECT_TRUE(contains(r.output, "OK worker " + std::to_string(w) + " loss")) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 0] OK ps 0")) << r.output;
  EXPECT_TRUE(contains(r.output, "lost 1 rejoins 1")) << r.output;
  // The other workers were never stopped: each ran once.
  EXPECT_FALSE(contains(r.output, "stopping the other ranks")) << r.output;
}

TEST(ParameterServerLaunch, WithoutRestartsTheJobRunsOnAndReportsTheFailure) {
  const RunResult r = run_ps_job(3, 1, {"async", "30", "5", "300"});  // the PS waits 300 ms for a restart
  // The worker's abort is the job's status, but the other worker finished its training.
  EXPECT_EQ(r.exit_code, 128 + 6) << r.output;
  EXPECT_TRUE(contains(r.output, "the parameter-server job runs on without it")) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 1] OK worker 0 loss")) << r.output;
  EXPECT_TRUE(contains(r.output, "[rank 0] OK ps 0")) << r.output;
  EXPECT_TRUE(contains(r.output, "lost 1 rejoins 0")) << r.output;
}

}  // namespace
}  // namespace anvil::test
