// The tensor-parallel mappings on 2 and 4 rank threads (real Gloo): each
// one's forward and backward against what the collective means, computed
// from every rank's random inputs on the calling thread.
#include <gtest/gtest.h>

#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "distributed/tensor_parallel/mappings.h"
#include "tests/distributed/rank_threads.h"
#include "tests/distributed/tensor_parallel/tp_test_util.h"

namespace anvil::distributed::tensor_parallel {
namespace {

using distributed::testing::run_ranks;
using testing::leaf_copy;
using testing::max_abs_diff;
using testing::slice_of;

// Per rank: an input x_r [2, 4, 6] and an upstream gradient g_r of the
// output's shape (`out_shape`), so every backward sees different values.
struct RankData {
  std::vector<Tensor> x, g;
};
RankData random_data(int n, const Shape& in_shape, const Shape& out_shape) {
  RankData d;
  for (int r = 0; r < n; ++r) d.x.push_back(randn(in_shape, kFloat64)), d.g.push_back(randn(out_shape, kFloat64));
  return d;
}

Tensor sum_of(const std::vector<Tensor>& ts) {
  Tensor s = ts[0].clone();
  for (size_t i = 1; i < ts.size(); ++i) s = s + ts[i];
  return s;
}

class Mappings : public ::testing::TestWithParam<int> {};

TEST_P(Mappings, CopyIsIdentityForwardAndAllReduceBackward) {
  const int n = GetParam();
  RankData d = random_data(n, {2, 4, 6}, {2, 4, 6});
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    Tensor x = leaf_copy(d.x[r]);
    Tensor y = copy_to_tensor_parallel_region(x, group);
    EXPECT_EQ(max_abs_diff(y, d.x[r]), 0.0);
    (y * d.g[r]).sum().backward();
    EXPECT_LT(max_abs_diff(x.grad(), sum_of(d.g)), 1e-12);
  });
}

TEST_P(Mappings, ReduceIsAllReduceForwardAndIdentityBackward) {
  const int n = GetParam();
  RankData d = random_data(n, {2, 4, 6}, {2, 4, 6});
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    Tensor x = leaf_copy(d.x[r]);
    Tensor y = reduce_from_tensor_parallel_region(x, group);
    EXPECT_LT(max_abs_diff(y, sum_of(d.x)), 1e-12);
    (y * d.g[r]).sum().backward();
    EXPECT_EQ(max_abs_diff(x.grad(), d.g[r]), 0.0);
  });
}

TEST_P(Mappings, ScatterAndGatherAlongTheLastDimAreAdjoint) {
  const int n = GetParam();
  // scatter: the same full x on every rank, slices out; gather: slices in, full out.
  RankData d = random_data(n, {3, 8}, {3, 8 / n});
  RankData e = random_data(n, {3, 8 / n}, {3, 8});
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    Tensor x = leaf_copy(d.x[0]);
    Tensor mine = scatter_to_tensor_parallel_region(x, group);
    EXPECT_EQ(max_abs_diff(mine, slice_of(d.x[0], 1, r, n)), 0.0);
    (mine * d.g[r]).sum().backward();
    EXPECT_EQ(max_abs_diff(x.grad(), cat(d.g, 1)), 0.0) << "the gradient slices all-gathered";

    Tensor part = leaf_copy(e.x[r]);
    Tensor full = gather_from_tensor_parallel_region(part, group);
    EXPECT_EQ(max_abs_diff(full, cat(e.x, 1)), 0.0);
    (full * e.g[r]).sum().backward();
    EXPECT_EQ(max_abs_diff(part.grad(), slice_of(e.g[r], 1, r, n)), 0.0) << "this rank's slice of its gradient";
  });
}

TEST_P(Mappings, SequenceParallelGatherAndReduceScatterAlongDimOne) {
  const int n = GetParam();
  const int64_t t = 4;  // sequence length of the full tensors; each rank holds t / n steps
  RankData gather = random_data(n, {2, t / n, 3}, {2, t, 3});
  RankData rs = random_data(n, {2, t, 3}, {2, t / n, 3});
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    Tensor part = leaf_copy(gather.x[r]);
    Tensor full = gather_from_sequence_parallel_region(part, 1, group);
    EXPECT_EQ(max_abs_diff(full, cat(gather.x, 1)), 0.0);
    (full * gather.g[r]).sum().backward();
    EXPECT_LT(max_abs_diff(part.grad(), slice_of(sum_of(gather.g), 1, r, n)), 1e-12) << "reduce-scatter backward";

    Tensor x = leaf_copy(rs.x[r]);
    Tensor mine = reduce_scatter_to_sequence_parallel_region(x, 1, group);
    EXPECT_LT(max_abs_diff(mine, slice_of(sum_of(rs.x), 1, r, n)), 1e-12);
    (mine * rs.g[r]).sum().backward();
    EXPECT_EQ(max_abs_diff(x.grad(), cat(rs.g, 1)), 0.0) << "all-gather backward";

    Tensor whole = leaf_copy(rs.x[0]);
    Tensor slice = scatter_to_sequence_parallel_region(whole, -2, group);
    EXPECT_EQ(max_abs_diff(slice, slice_of(rs.x[0], 1, r, n)), 0.0);
    (slice * rs.g[r]).sum().backward();
    EXPECT_EQ(max_abs_diff(whole.grad(), cat(rs.g, 1)), 0.0);
  });
}

TEST_P(Mappings, AnIndivisibleDimensionIsAnErrorNamingTheSizes) {
  const int n = GetParam();
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    Tensor x = zeros({2, 4 * n + 1});
    try {
      scatter_to_tensor_parallel_region(x, group);
      ADD_FAILURE() << "expected an error";
    } catch (const std::exception& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("scatter_to_tensor_parallel_region: dimension 1 of [2, " + std::to_string(4 * n + 1) + "]"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("tensor-parallel size " + std::to_string(n)), std::string::npos) << m;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Mappings, ::testing::Values(2, 4));

}  // namespace
}  // namespace anvil::distributed::tensor_parallel
