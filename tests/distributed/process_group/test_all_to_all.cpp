// all_to_all_single and all_to_all on 4 ranks (threads, real Gloo): uneven
// random splits (empty blocks included) against the permutation computed
// here, equal splits, the list form sync and async, a subgroup, and bad
// splits, locally and across ranks.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "distributed/process_group/subgroup.h"
#include "harness.h"
#include "tests/distributed/rank_threads.h"

namespace anvil::distributed {
namespace {

using anvil::test::contains;
using anvil::test::error_of;
using testing::run_ranks;
using testing::run_world_ranks;
using namespace std::chrono_literals;

using Splits = std::vector<std::vector<int64_t>>;  // [from][to]: rows sent

Splits random_splits(int n, int max_rows, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int64_t> d(0, max_rows);
  Splits s(static_cast<size_t>(n), std::vector<int64_t>(static_cast<size_t>(n)));
  for (auto& row : s)
    for (auto& v : row) v = d(gen);
  return s;
}

std::vector<int64_t> column(const Splits& s, size_t to) {
  std::vector<int64_t> c;
  for (const auto& row : s) c.push_back(row[to]);
  return c;
}

int64_t sum(const std::vector<int64_t>& v) {
  int64_t t = 0;
  for (int64_t x : v) t += x;
  return t;
}

// What rank `to` must hold: rank j's block for it, for every j, in rank order.
std::vector<double> expected_output(const std::vector<Tensor>& inputs, const Splits& s, size_t to, int64_t row) {
  std::vector<double> want;
  for (size_t from = 0; from < inputs.size(); ++from) {
    int64_t offset = 0;
    for (size_t k = 0; k < to; ++k) offset += s[from][k];
    std::vector<double> all = inputs[from].to_vector<double>();
    want.insert(want.end(), all.begin() + offset * row, all.begin() + (offset + s[from][to]) * row);
  }
  return want;
}

uint64_t fresh_seed() { return std::random_device{}(); }

TEST(AllToAll, SingleWithUnevenRandomSplits) {
  const int n = 4;
  const int64_t row = 3;
  for (int round = 0; round < 3; ++round) {
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    Splits s = random_splits(n, 3, seed);
    std::vector<Tensor> inputs;
    for (int r = 0; r < n; ++r) inputs.push_back(randn({sum(s[static_cast<size_t>(r)]), row}, kFloat32));
    std::vector<Tensor> outputs(n);
    run_ranks(
        n,
        [&](std::shared_ptr<ProcessGroup> g) {
          const auto me = static_cast<size_t>(g->rank());
          std::vector<int64_t> out_splits = column(s, me);
          Tensor out = full({sum(out_splits), row}, -1.0, kFloat32);
          g->all_to_all_single(out, inputs[me], out_splits, s[me])->wait();
          outputs[me] = out;
        },
        20s);
    for (size_t r = 0; r < static_cast<size_t>(n); ++r)
      EXPECT_EQ(outputs[r].to_vector<double>(), expected_output(inputs, s, r, row)) << "rank " << r;
  }
}

TEST(AllToAll, SingleWithEqualSplitsIsATranspose) {
  const int n = 4;
  std::vector<Tensor> inputs;
  for (int r = 0; r < n; ++r) inputs.push_back(randn({2 * n, 2}, kFloat64));
  Splits s(n, std::vector<int64_t>(n, 2));
  std::vector<Tensor> outputs(n);
  run_ranks(
      n,
      [&](std::shared_ptr<ProcessGroup> g) {
        const auto me = static_cast<size_t>(g->rank());
        Tensor out = zeros({2 * n, 2}, kFloat64);
        g->all_to_all_single(out, inputs[me])->wait();  // no splits: equal blocks
        outputs[me] = out;
      },
      20s);
  for (size_t r = 0; r < static_cast<size_t>(n); ++r)
    EXPECT_EQ(outputs[r].to_vector<double>(), expected_output(inputs, s, r, 2)) << "rank " << r;
}

TEST(AllToAll, ListFormWithOneShapePerPairSyncAndAsync) {
  const int n = 4;
  // inputs[from][to] holds (from + 1) * (to + 2) - 2 elements (0 for 0 -> 0), as int64.
  auto count = [](int from, int to) { return static_cast<int64_t>((from + 1) * (to + 2) - 2); };
  std::vector<std::vector<Tensor>> inputs(n);
  for (int from = 0; from < n; ++from)
    for (int to = 0; to < n; ++to) inputs[from].push_back(randn({count(from, to)}, kFloat64).mul_(1000.0).to(kInt64));
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async" : "sync");
    std::vector<std::vector<Tensor>> outputs(n);
    run_ranks(
        n,
        [&](std::shared_ptr<ProcessGroup> g) {
          const int me = g->rank();
          std::vector<Tensor> outs;
          for (int from = 0; from < n; ++from) outs.push_back(zeros({count(from, me)}, kInt64));
          WorkHandle w = g->all_to_all(outs, inputs[me]);
          if (async) {
            // A second exchange queued behind the first: both complete in order.
            std::vector<Tensor> outs2;
            for (int from = 0; from < n; ++from) outs2.push_back(zeros({count(from, me)}, kInt64));
            WorkHandle w2 = g->all_to_all(outs2, inputs[me]);
            w2->wait();
            for (int from = 0; from < n; ++from)
              EXPECT_EQ(outs2[from].to_vector<int64_t>(), inputs[from][me].to_vector<int64_t>());
          }
          w->wait();
          EXPECT_TRUE(w->is_completed());
          outputs[me] = outs;
        },
        20s);
    for (int to = 0; to < n; ++to)
      for (int from = 0; from < n; ++from)
        EXPECT_EQ(outputs[to][from].to_vector<int64_t>(), inputs[from][to].to_vector<int64_t>())
            << "rank " << to << " from rank " << from;
  }
}

TEST(AllToAll, OnASubgroupInGroupRanks) {
  // {1, 2, 3}: group rank g is world rank g + 1; world rank 0 idles.
  const int m = 3;
  Splits s = random_splits(m, 2, fresh_seed());
  std::vector<Tensor> inputs;
  for (int r = 0; r < m; ++r) inputs.push_back(randn({sum(s[static_cast<size_t>(r)])}, kFloat64));
  std::vector<Tensor> outputs(m);
  run_world_ranks(
      4,
      [&](World& world, std::shared_ptr<ProcessGroup>) {
        auto g = world.new_group({1, 2, 3});
        if (!g->is_member()) return;
        const auto me = static_cast<size_t>(g->rank());
        std::vector<int64_t> out_splits = column(s, me);
        Tensor out = zeros({sum(out_splits)}, kFloat64);
        g->all_to_all_single(out, inputs[me], out_splits, s[me])->wait();
        outputs[me] = out;
        g->barrier()->wait();
      },
      20s);
  for (size_t r = 0; r < static_cast<size_t>(m); ++r)
    EXPECT_EQ(outputs[r].to_vector<double>(), expected_output(inputs, s, r, 1)) << "group rank " << r;
}

TEST(AllToAll, BadSplitsAreClearErrors) {
  run_ranks(
      4,
      [&](std::shared_ptr<ProcessGroup> g) {
        const int me = g->rank();
        Tensor in = randn({6, 2}, kFloat32), out = zeros({6, 2}, kFloat32);
        std::string e = error_of([&] { g->all_to_all_single(out, in, {}, {1, 2, 3, 1}); });
        EXPECT_TRUE(contains(e, "input_split_sizes [1, 2, 3, 1] sums to 7 rows, but the tensor's first dimension is 6"))
            << e;
        e = error_of([&] { g->all_to_all_single(out, in, {3, 3}, {2, 2, 1, 1}); });
        EXPECT_TRUE(contains(e, "output_split_sizes [3, 3] has 2 entries; expected one per rank of the group (4)"))
            << e;
        e = error_of([&] { g->all_to_all_single(out, in, {}, {}); });
        EXPECT_TRUE(contains(e,
                             "the first dimension (6) is cut into equal blocks, but it does not divide by the group "
                             "size 4"))
            << e;
        e = error_of([&] { g->all_to_all_single(out, in, {2, 2, 2, 0}, {4, 4, -2, 0}); });
        EXPECT_TRUE(contains(e, "has a negative entry")) << e;
        Tensor wide = zeros({6, 3}, kFloat32);
        e = error_of([&] { g->all_to_all_single(wide, in, {}, {}); });
        EXPECT_TRUE(contains(e, "an output row (shape [6, 3]) has 3 elements but an input row (shape [6, 2]) has 2"))
            << e;
        Tensor f64 = zeros({6, 2}, kFloat64);
        e = error_of([&] { g->all_to_all_single(f64, in, {}, {}); });
        EXPECT_TRUE(contains(e, "output is float64 but input is float32")) << e;
        std::vector<int64_t> self_out(4, 0), self_in(4, 0);
        self_in[static_cast<size_t>(me)] = 6;
        self_out[static_cast<size_t>((me + 1) % 4)] = 6;
        e = error_of([&] { g->all_to_all_single(out, in, self_out, self_in); });
        EXPECT_TRUE(contains(e, "sends itself 6 rows (input_split_sizes) but expects 0 rows from itself")) << e;
        std::vector<Tensor> three(3, in), four(4, in);
        e = error_of([&] { g->all_to_all(three, four); });
        EXPECT_TRUE(contains(e, "got 4 inputs and 3 outputs; expected one tensor per rank of the group (4)")) << e;
        std::vector<Tensor> mixed = {in, in, f64, in};
        e = error_of([&] { g->all_to_all(four, mixed); });
        EXPECT_TRUE(contains(e, "inputs[2] is float64 on cpu but inputs[0] is float32 on cpu")) << e;

        // Splits that pass each rank's own checks but disagree across ranks:
        // rank 0 sends 2 rows to rank 1, which expects 1. Every rank learns it
        // from the count exchange and fails alike; the group stays usable.
        std::vector<int64_t> in_splits(4, 0), out_splits(4, 0);
        in_splits[static_cast<size_t>(me)] = 1;
        out_splits[static_cast<size_t>(me)] = 1;
        if (me == 0) in_splits[1] = 2;
        if (me == 1) out_splits[0] = 1;
        Tensor a = randn({sum(in_splits)}, kFloat32), b = zeros({sum(out_splits)}, kFloat32);
        e = error_of([&] { g->all_to_all_single(b, a, out_splits, in_splits)->wait(); });
        EXPECT_TRUE(contains(e, "the split sizes do not match")) << e;
        EXPECT_TRUE(contains(e, "rank 0 sends 2 elements to rank 1, which expects 1")) << e;
        g->barrier()->wait();
      },
      20s);
}

}  // namespace
}  // namespace anvil::distributed
