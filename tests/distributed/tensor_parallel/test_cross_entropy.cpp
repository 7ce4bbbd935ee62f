// vocab_parallel_cross_entropy on 2 and 4 rank threads against
// cross_entropy on the whole logits: the loss (every reduction) and each
// rank's column slice of the logits' gradient; large logits stay finite
// (the global max is subtracted); bad targets are errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/factory.h"
#include "core/ops.h"
#include "distributed/tensor_parallel/cross_entropy.h"
#include "tests/distributed/harness.h"
#include "tests/distributed/rank_threads.h"
#include "tests/distributed/tensor_parallel/tp_test_util.h"

namespace anvil::distributed::tensor_parallel {
namespace {

using anvil::test::contains;
using anvil::test::error_of;
using distributed::testing::run_ranks;
using testing::leaf_copy;
using testing::max_abs_diff;
using testing::slice_of;

class VocabParallelCrossEntropy : public ::testing::TestWithParam<int> {};

TEST_P(VocabParallelCrossEntropy, MatchesCrossEntropyOnTheWholeLogits) {
  const int n = GetParam();
  // [B, T, V] with one row far from zero, where exp without the max overflows.
  Tensor logits = randn({3, 5, 16}, kFloat64) * 4.0;
  logits.narrow(0, 0, 1).add_(800.0);
  Tensor targets = randint(0, 16, {3, 5});
  Tensor full = leaf_copy(logits);
  Tensor want = cross_entropy(full.reshape({-1, 16}), targets.reshape({-1}));
  want.backward();
  Tensor want_sum = cross_entropy(logits.reshape({-1, 16}), targets.reshape({-1}), {.reduction = Reduction::Sum});
  Tensor want_each = cross_entropy(logits.reshape({-1, 16}), targets.reshape({-1}), {.reduction = Reduction::None});
  ASSERT_TRUE(std::isfinite(want.item<double>()));
  // The gradient in float64 from its formula, (softmax - one_hot) / N:
  // anvil's cross_entropy keeps its logsumexp in float32 for backward, so
  // its float64 gradient is only as good as float32 at the logsumexp's size
  // (ulp 6e-5 at 800, the shifted row).
  Tensor flat = logits.reshape({-1, 16});
  Tensor e = (flat - amax(flat, {1}, true)).exp();
  Tensor exact_grad = ((e / e.sum(1, true) - one_hot(targets.reshape({-1}), 16).to(kFloat64)) / 15.0).view({3, 5, 16});
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    Tensor mine = leaf_copy(slice_of(logits, -1, r, n));
    Tensor loss = vocab_parallel_cross_entropy(mine, targets, group);
    EXPECT_LT(max_abs_diff(loss, want), 1e-10);
    loss.backward();
    EXPECT_LT(max_abs_diff(mine.grad(), slice_of(exact_grad, -1, r, n)), 1e-12);
    EXPECT_LT(max_abs_diff(mine.grad(), slice_of(full.grad(), -1, r, n)), 1e-5) << "cross_entropy's own gradient";

    EXPECT_LT(max_abs_diff(vocab_parallel_cross_entropy(mine, targets, group, {.reduction = Reduction::Sum}), want_sum),
              1e-9);
    Tensor each = vocab_parallel_cross_entropy(mine, targets, group, {.reduction = Reduction::None});
    EXPECT_EQ(each.shape(), (Shape{3, 5}));
    EXPECT_LT(max_abs_diff(each.reshape({-1}), want_each), 1e-10);
  });
}

TEST_P(VocabParallelCrossEntropy, Float32MatchesWithinSinglePrecision) {
  const int n = GetParam();
  Tensor logits = randn({8, 12});
  Tensor targets = randint(0, 12, {8});
  Tensor full = leaf_copy(logits);
  Tensor want = cross_entropy(full, targets);
  want.backward();
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    Tensor mine = leaf_copy(slice_of(logits, -1, r, n));
    Tensor loss = vocab_parallel_cross_entropy(mine, targets, group);
    EXPECT_EQ(loss.dtype(), kFloat32);
    EXPECT_LT(max_abs_diff(loss, want), 1e-5);
    loss.backward();
    EXPECT_LT(max_abs_diff(mine.grad(), slice_of(full.grad(), -1, r, n)), 1e-6);
  });
}

TEST_P(VocabParallelCrossEntropy, BadTargetsAreErrors) {
  const int n = GetParam();
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    Tensor logits = zeros({4, 3});
    std::string e = error_of([&] { vocab_parallel_cross_entropy(logits, full({4}, 3 * n, kInt64), group); });
    EXPECT_TRUE(contains(e, "targets must be in [0, " + std::to_string(3 * n) + ") (3 logits on each of " +
                                std::to_string(n) + " ranks)"))
        << e;
    e = error_of([&] { vocab_parallel_cross_entropy(logits, zeros({5}, kInt64), group); });
    EXPECT_TRUE(contains(e, "got logits [4, 3] and targets [5]")) << e;
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, VocabParallelCrossEntropy, ::testing::Values(2, 4));

}  // namespace
}  // namespace anvil::distributed::tensor_parallel
