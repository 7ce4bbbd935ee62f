// new_group on 4 ranks (threads, real Gloo over loopback): every collective
// on a subgroup against values computed here, with group ranks; two
// disjoint groups running different work at once; overlapping groups and
// the whole world; ring_all_reduce on a subgroup; non-members and bad
// arguments getting clear errors.
#include <gtest/gtest.h>

#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "distributed/process_group/ring_all_reduce.h"
#include "distributed/process_group/subgroup.h"
#include "harness.h"
#include "tests/distributed/rank_threads.h"

namespace anvil::distributed {
namespace {

using anvil::test::contains;
using anvil::test::error_of;
using testing::random_rank_inputs;
using testing::run_world_ranks;
using namespace std::chrono_literals;

void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.numel(), want.numel()) << what;
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g[i], w[i]) << what << ": element " << i;
}

TEST(Subgroup, CollectivesOnMembersWhileTheOthersRunTheirOwn) {
  const int64_t n = 37;
  std::vector<Tensor> x = random_rank_inputs(4, n), y = random_rank_inputs(4, 2 * n), z = random_rank_inputs(4, 5);
  // {0, 2}: a sum of two doubles is exact in either order.
  Tensor sum02 = x[0].add(x[2]);
  Tensor gathered02 = cat({x[0], x[2]});
  Tensor scattered02 = y[0].add(y[2]);
  // {1, 3}: something else entirely, at the same time.
  Tensor max13 = maximum(z[1], z[3]);

  run_world_ranks(
      4,
      [&](World& world, std::shared_ptr<ProcessGroup>) {
        const int me = world.rank();
        auto g02 = world.new_group({2, 0});  // sorted: group rank 0 is world rank 0
        auto g13 = world.new_group({1, 3});
        EXPECT_EQ(g02->ranks(), (std::vector<int>{0, 2}));
        EXPECT_EQ(g02->size(), 2);
        EXPECT_EQ(g02->group_rank(2), 1);
        EXPECT_EQ(g02->group_rank(1), -1);
        EXPECT_EQ(g02->global_rank(1), 2);
        if (me == 0 || me == 2) {
          const int gr = me / 2;
          EXPECT_TRUE(g02->is_member());
          EXPECT_FALSE(g13->is_member());
          EXPECT_EQ(g02->rank(), gr);
          EXPECT_EQ(g13->rank(), -1);
          EXPECT_EQ(g02->backend_name(), "gloo");

          Tensor t = x[me].clone();
          g02->all_reduce(t, ReduceOp::Sum)->wait();
          expect_equal(t, sum02, "all_reduce");

          Tensor b = x[me].clone();
          g02->broadcast(b, 1)->wait();  // group rank 1 = world rank 2
          expect_equal(b, x[2], "broadcast");

          Tensor all = zeros({2 * n}, kFloat64);
          g02->all_gather(all, x[me])->wait();
          expect_equal(all, gathered02, "all_gather");

          Tensor part = zeros({n}, kFloat64);
          g02->reduce_scatter(part, y[me], ReduceOp::Sum)->wait();
          expect_equal(part, scattered02.narrow(0, gr * n, n), "reduce_scatter");

          // Point to point in group ranks: 0 -> 1 is world 0 -> world 2.
          Tensor p = gr == 0 ? x[0].clone() : zeros({n}, kFloat64);
          if (gr == 0)
            g02->send(p, 1, 3)->wait();
          else
            g02->recv(p, 0, 3)->wait();
          expect_equal(p, x[0], "send/recv");

          Tensor ring = x[me].clone();
          ring_all_reduce(*g02, ring, ReduceOp::Sum, {.chunk_bytes = 64});
          expect_equal(ring, sum02, "ring_all_reduce");

          g02->barrier()->wait();
          std::string e = error_of([&] { g13->barrier(); });
          EXPECT_TRUE(
              contains(e, "barrier on group 1 [1, 3]: rank " + std::to_string(me) + " of the world is not a member"))
              << e;
        } else {
          EXPECT_FALSE(g02->is_member());
          EXPECT_EQ(g02->rank(), -1);
          Tensor t = z[me].clone();
          std::string e = error_of([&] { g02->all_reduce(t); });
          EXPECT_TRUE(
              contains(e, "all_reduce on group 0 [0, 2]: rank " + std::to_string(me) + " of the world is not a member"))
              << e;
          e = error_of([&] { g02->backend(); });
          EXPECT_TRUE(contains(e, "not a member")) << e;
          // More collectives than {0, 2} runs, of other sizes, with async work in flight.
          std::vector<WorkHandle> works;
          std::vector<Tensor> ts;
          for (int i = 0; i < 5; ++i) {
            ts.push_back(z[me].clone());
            works.push_back(g13->all_reduce(ts.back(), ReduceOp::Max));
          }
          for (auto& w : works) w->wait();
          for (auto& r : ts) expect_equal(r, max13, "all_reduce Max on {1, 3}");
          g13->barrier()->wait();
        }
      },
      20s);
}

TEST(Subgroup, OverlappingGroupsTheWorldAndASingleRank) {
  std::vector<Tensor> x = random_rank_inputs(4, 11);
  Tensor world_sum = x[0].add(x[1]).add(x[2]).add(x[3]);
  run_world_ranks(
      4,
      [&](World& world, std::shared_ptr<ProcessGroup>) {
        const int me = world.rank();
        auto all = world.new_group({});  // empty: every rank
        auto first3 = world.new_group({0, 1, 2});
        auto last = world.new_group({3});
        EXPECT_EQ(all->ranks(), (std::vector<int>{0, 1, 2, 3}));
        EXPECT_EQ(all->rank(), me);
        EXPECT_EQ(last->is_member(), me == 3);

        // Interleaved: the world, then the three, then the world again.
        Tensor a = x[me].clone();
        all->all_reduce(a)->wait();
        if (first3->is_member()) {
          Tensor m = x[me].clone();
          first3->all_reduce(m, ReduceOp::Min)->wait();
          expect_equal(m, minimum(minimum(x[0], x[1]), x[2]), "all_reduce Min on {0, 1, 2}");
          Tensor b = x[me].clone();
          first3->broadcast(b, 2)->wait();
          expect_equal(b, x[2], "broadcast from group rank 2");
        } else {
          Tensor s = x[me].clone();
          last->all_reduce(s)->wait();  // a group of one is an identity
          expect_equal(s, x[me], "all_reduce on {3}");
          std::string e = error_of([&] { first3->barrier(); });
          EXPECT_TRUE(contains(e, "not a member")) << e;
        }
        Tensor again = a.clone();
        all->all_reduce(again, ReduceOp::Max)->wait();
        expect_equal(again, a, "all_reduce Max of equal tensors");
        // Sums of four doubles depend on the order; every rank gets the same bits.
        Tensor check = a.clone();
        all->broadcast(check, 0)->wait();
        expect_equal(a, check, "the same sum on every rank");
        EXPECT_LT(a.sub(world_sum).abs().max().item<double>(), 1e-12);
        all->barrier()->wait();
      },
      20s);
}

TEST(Subgroup, BadRanksAreErrorsOnEveryRankAndTheNumberingHolds) {
  run_world_ranks(
      4,
      [&](World& world, std::shared_ptr<ProcessGroup>) {
        const int me = world.rank();
        std::string e = error_of([&] { world.new_group({0, 4}); });
        EXPECT_TRUE(contains(e, "rank 4 is not in the world [0, 4)")) << e;
        e = error_of([&] { world.new_group({-1, 2}); });
        EXPECT_TRUE(contains(e, "rank -1 is not in the world [0, 4)")) << e;
        e = error_of([&] { world.new_group({1, 2, 1}); });
        EXPECT_TRUE(contains(e, "rank 1 is listed twice")) << e;
        // Rank 3 disagrees on who is in group 0: it alone fails, with both lists;
        // 0 and 1 (who agree) get their group.
        std::vector<int> ranks = me == 3 ? std::vector<int>{0, 1, 3} : std::vector<int>{0, 1};
        std::shared_ptr<SubGroup> g;
        e = error_of([&] { g = world.new_group(ranks); });
        if (me == 3) {
          EXPECT_TRUE(contains(e,
                               "this rank was called with ranks [0, 1, 3] but the lowest member of the group was "
                               "called with [0, 1]"))
              << e;
        } else {
          EXPECT_EQ(e, "(no error)");
          EXPECT_EQ(g->id(), 0);  // the rejected calls above numbered nothing
          EXPECT_EQ(g->is_member(), me < 2);
          if (me < 2) g->barrier()->wait();
        }
        // The numbering still agrees: the next group works everywhere.
        auto next = world.new_group({1, 2, 3});
        EXPECT_EQ(next->id(), 1);
        if (next->is_member()) {
          Tensor t = full({3}, static_cast<double>(me), kFloat32);
          next->all_reduce(t)->wait();
          EXPECT_EQ(t.to_vector<float>()[0], 6.0f);
          e = error_of([&] { next->global_rank(3); });
          EXPECT_TRUE(contains(e, "group rank 3 is not in [0, 3)")) << e;
          Tensor s = zeros({3}, kFloat32);
          e = error_of([&] { next->send(s, 3); });  // group ranks, not world ranks
          EXPECT_TRUE(contains(e, "destination 3 must be another rank in [0, 3)")) << e;
          next->barrier()->wait();
        }
      },
      20s);
}

}  // namespace
}  // namespace anvil::distributed
