// anvil-run --nnodes 2 across two network namespaces on one machine (two
// "hosts" joined by a veth link, net_namespaces.h): every collective across
// the link, a node killed mid-step, and the link cut mid-step. Skipped, with
// the reason, where the machine cannot make namespaces (not root, no `ip`).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <random>
#include <string>
#include <vector>

#include "harness.h"
#include "net_namespaces.h"

namespace {

using anvil::test::bin_path;
using anvil::test::contains;
using anvil::test::Job;
using anvil::test::NamespacePair;
using anvil::test::RunResult;
using Clock = std::chrono::steady_clock;

// Short, so a failure path is over in seconds; the process group's timeout
// and the launcher's bound on stopping ranks.
constexpr int kGroupTimeoutMs = 5000;
constexpr auto kJobTimeout = std::chrono::seconds(25);

class TwoNodes : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why_not;
    hosts_ = NamespacePair::create(&why_not);
    if (!hosts_) GTEST_SKIP() << why_not;
  }

  // anvil-run for `node` of 2, two ranks each, inside its namespace; the
  // master (the store, served by rank 0) is node 0's address on the link.
  std::unique_ptr<Job> start_node(int node, const std::vector<std::string>& worker_args) {
    std::vector<std::string> argv = {bin_path("anvil-run"), "--nnodes", "2", "--node-rank", std::to_string(node),
                                     "--nproc-per-node", "2", "--master-addr", hosts_->address(0),
                                     "--master-port", "29500", "--kill-grace", "2", "--",
                                     bin_path("dist_worker_collectives")};
    argv.insert(argv.end(), worker_args.begin(), worker_args.end());
    return std::make_unique<Job>(hosts_->inside(node, argv),
                                 anvil::test::RunOptions{.env = {{"OMP_NUM_THREADS", "1"}}, .timeout = kJobTimeout});
  }

  // Both nodes a few steps into the `steps` job (ranks 0 and 2 said so).
  void wait_until_both_nodes_step(Job& node0, Job& node1) {
    const auto deadline = Clock::now() + std::chrono::seconds(15);
    ASSERT_TRUE(node0.wait_for_output("[rank 0] step 3 ok", deadline)) << node0.output_so_far();
    ASSERT_TRUE(node1.wait_for_output("[rank 2] step 3 ok", deadline)) << node1.output_so_far();
  }

  std::unique_ptr<NamespacePair> hosts_;
};

TEST_F(TwoNodes, EveryCollectiveAcrossTheLinkAgreesOnAllFourRanks) {
  const std::string seed = std::to_string(std::random_device{}() % 100000);
  const std::vector<std::string> args = {"collectives", "--seed", seed, "--timeout-ms", "20000"};
  auto node0 = start_node(0, args);
  auto node1 = start_node(1, args);
  RunResult r0 = node0->finish(), r1 = node1->finish();
  ASSERT_FALSE(r0.timed_out) << r0.output;
  ASSERT_FALSE(r1.timed_out) << r1.output;
  EXPECT_EQ(r0.exit_code, 0) << "seed " << seed << "\n" << r0.output;
  EXPECT_EQ(r1.exit_code, 0) << "seed " << seed << "\n" << r1.output;
  // Each rank checked every result against values recomputed for all four.
  for (int rank = 0; rank < 4; ++rank) {
    const RunResult& r = rank < 2 ? r0 : r1;
    EXPECT_TRUE(contains(r.output, "[rank " + std::to_string(rank) + "] OK collectives rank " + std::to_string(rank) +
                                       " of 4"))
        << r.output;
  }
}

// SIGKILL to node 1's whole anvil-run process group: its ranks' sockets
// close, so node 0's ranks fail at once, and node 0's launcher exits
// non-zero, well within the group's timeout.
TEST_F(TwoNodes, KilledNodeMakesTheOtherNodeFailPromptly) {
  const std::vector<std::string> args = {"steps", "--timeout-ms", std::to_string(kGroupTimeoutMs)};
  auto node0 = start_node(0, args);
  auto node1 = start_node(1, args);
  wait_until_both_nodes_step(*node0, *node1);
  const auto killed_at = Clock::now();
  node1->signal_group(SIGKILL);
  RunResult r0 = node0->finish();
  const auto elapsed = Clock::now() - killed_at;
  RunResult r1 = node1->finish();
  ASSERT_FALSE(r0.timed_out) << r0.output;
  EXPECT_EQ(r1.exit_code, 128 + SIGKILL) << r1.output;
  EXPECT_EQ(r0.exit_code, 1) << "node 0's ranks fail with status 1\n" << r0.output;
  EXPECT_LT(elapsed, std::chrono::milliseconds(kGroupTimeoutMs)) << r0.output;
  for (int rank : {0, 1}) {
    EXPECT_TRUE(contains(r0.output, "[rank " + std::to_string(rank) + "] FAIL: GlooProcessGroup all_reduce (rank " +
                                        std::to_string(rank) + " of 4)"))
        << r0.output;
  }
  // The error names the peer it lost (its address on the link).
  EXPECT_TRUE(contains(r0.output, hosts_->address(1))) << r0.output;
  EXPECT_TRUE(contains(r0.output, "; stopping the other ranks")) << r0.output;
}

// The link goes down with both nodes alive: nothing closes a socket, so only
// the group's timeout can end the step. Every rank on both nodes must fail
// with an error naming the timeout, after it and not long after.
TEST_F(TwoNodes, CutLinkMakesBothNodesFailWithinTheTimeout) {
  const std::vector<std::string> args = {"steps", "--timeout-ms", std::to_string(kGroupTimeoutMs)};
  auto node0 = start_node(0, args);
  auto node1 = start_node(1, args);
  wait_until_both_nodes_step(*node0, *node1);
  const auto cut_at = Clock::now();
  hosts_->cut_link();
  RunResult r0 = node0->finish(), r1 = node1->finish();
  const auto elapsed = Clock::now() - cut_at;
  ASSERT_FALSE(r0.timed_out) << r0.output;
  ASSERT_FALSE(r1.timed_out) << r1.output;
  EXPECT_EQ(r0.exit_code, 1) << r0.output;
  EXPECT_EQ(r1.exit_code, 1) << r1.output;
  // One step may be in flight when the link goes (its timeout started a
  // little earlier); stopping the ranks takes at most the 2 s kill grace.
  EXPECT_LT(elapsed, std::chrono::milliseconds(kGroupTimeoutMs + 4000)) << r0.output << r1.output;
  EXPECT_GT(elapsed, std::chrono::milliseconds(kGroupTimeoutMs / 2)) << "failed before any timeout could pass\n"
                                                                       << r0.output << r1.output;
  for (const RunResult* r : {&r0, &r1})
    EXPECT_TRUE(contains(r->output, std::to_string(kGroupTimeoutMs) + " ms")) << "the error names the timeout\n"
                                                                              << r->output;
}

}  // namespace
