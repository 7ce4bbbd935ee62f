// batch_isend_irecv on ranks as threads (real Gloo): the ring exchange that
// deadlocks NCCL when its recv goes out alone, many tagged ops to and from
// every peer in one batch, the free function on a subgroup, the ring
// all-reduce built on it, and bad ops.
#include <gtest/gtest.h>

#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "distributed/process_group/collectives.h"
#include "distributed/process_group/ring_all_reduce.h"
#include "distributed/process_group/subgroup.h"
#include "harness.h"
#include "tests/distributed/rank_threads.h"

namespace anvil::distributed {
namespace {

using anvil::test::contains;
using anvil::test::error_of;
using testing::random_rank_inputs;
using testing::run_ranks;
using testing::run_world_ranks;

std::vector<double> values(const Tensor& t) { return t.contiguous().to_vector<double>(); }

TEST(BatchIsendIrecv, RingExchangeWithTheRecvFirst) {
  const int n = 4;
  const std::vector<Tensor> inputs = random_rank_inputs(n, 37);
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> g) {
    const int r = g->rank(), next = (r + 1) % n, prev = (r + n - 1) % n;
    Tensor mine = inputs[static_cast<size_t>(r)].clone();
    Tensor theirs = zeros({37}, kFloat64);
    std::vector<WorkHandle> works = g->batch_isend_irecv({P2POp::irecv(theirs, prev), P2POp::isend(mine, next)});
    ASSERT_EQ(works.size(), 2u);
    for (auto& w : works) w->wait();
    EXPECT_EQ(values(theirs), values(inputs[static_cast<size_t>(prev)]));
    EXPECT_EQ(values(mine), values(inputs[static_cast<size_t>(r)])) << "a send must not change its tensor";
  });
}

TEST(BatchIsendIrecv, TaggedOpsToAndFromEveryPeerMatchByTag) {
  const int n = 3;
  // messages[from][to][k]: two messages per pair, told apart by their tags.
  std::vector<std::vector<std::vector<Tensor>>> messages(n, std::vector<std::vector<Tensor>>(n));
  for (auto& row : messages)
    for (auto& pair : row) pair = {randn({5}, kFloat64), randn({2, 3}, kFloat64)};
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> g) {
    const int r = g->rank();
    std::vector<P2POp> ops;
    std::vector<std::vector<Tensor>> got(n);
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      got[p] = {zeros({5}, kFloat64), zeros({2, 3}, kFloat64)};
      // Receives posted in the opposite tag order to the peer's sends.
      ops.push_back(P2POp::irecv(got[p][1], p, 11));
      ops.push_back(P2POp::isend(messages[r][p][0], p, 10));
      ops.push_back(P2POp::irecv(got[p][0], p, 10));
      ops.push_back(P2POp::isend(messages[r][p][1], p, 11));
    }
    for (auto& w : batch_isend_irecv(ops, {.async_op = true, .group = g.get()})) w->wait();
    for (int p = 0; p < n; ++p) {
      if (p == r) continue;
      EXPECT_EQ(values(got[p][0]), values(messages[p][r][0])) << "rank " << r << " from " << p;
      EXPECT_EQ(values(got[p][1]), values(messages[p][r][1])) << "rank " << r << " from " << p;
    }
  });
}

TEST(BatchIsendIrecv, OnASubgroupPeersAreGroupRanks) {
  const int n = 4;
  const std::vector<Tensor> inputs = random_rank_inputs(n, 9);
  run_world_ranks(n, [&](World& world, std::shared_ptr<ProcessGroup>) {
    auto odd = world.new_group({1, 3});
    if (!odd->is_member()) return;
    const int me = odd->rank(), other = 1 - me;
    Tensor got = zeros({9}, kFloat64);
    batch_isend_irecv({P2POp::isend(inputs[static_cast<size_t>(world.rank())], other), P2POp::irecv(got, other)},
                      {.group = odd.get()});
    EXPECT_EQ(values(got), values(inputs[static_cast<size_t>(odd->global_rank(other))]));
  });
}

TEST(BatchIsendIrecv, RingAllReduceOnItMatchesTheSum) {
  const int n = 3;
  const std::vector<Tensor> inputs = random_rank_inputs(n, 1001);
  Tensor expected = inputs[0] + inputs[1] + inputs[2];
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> g) {
    Tensor t = inputs[static_cast<size_t>(g->rank())].clone();
    ring_all_reduce(*g, t, ReduceOp::Sum, {.chunk_bytes = 512});  // several chunks per segment
    std::vector<double> got = values(t), want = values(expected);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << "element " << i;
  });
}

TEST(BatchIsendIrecv, ABadPeerNamesTheOpAndTheRange) {
  run_ranks(2, [&](std::shared_ptr<ProcessGroup> g) {
    Tensor t = randn({3});
    std::string e = error_of([&] { g->batch_isend_irecv({P2POp::isend(t, 2)}); });
    EXPECT_TRUE(contains(e, "send")) << e;
    EXPECT_TRUE(contains(e, "destination 2")) << e;
    EXPECT_TRUE(g->batch_isend_irecv({}).empty());
  });
}

}  // namespace
}  // namespace anvil::distributed
