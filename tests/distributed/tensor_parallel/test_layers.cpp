// ColumnParallelLinear, RowParallelLinear and VocabParallelEmbedding built
// from a single-process layer (from_full) on 2 and 4 rank threads: outputs,
// input gradients and each rank's slice of the parameter gradients equal
// the unsplit layer's on random float64 inputs; bad sizes and ids are
// errors naming the layer, the size and the tensor-parallel world.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "distributed/tensor_parallel/layers.h"
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

constexpr double kTolerance = 1e-10;  // float64: only the order of the additions differs

// The single-process reference: output and gradients of sum(layer(x) * g).
struct Reference {
  Tensor y, x_grad, weight_grad, bias_grad;
};
Reference run_full_linear(nn::Linear& full, const Tensor& x, const Tensor& g) {
  Tensor xl = leaf_copy(x);
  Tensor y = full.forward(xl);
  (y * g).sum().backward();
  return {y.detach(), xl.grad(), full.weight.grad(), full.bias.grad()};
}

class ParallelLayers : public ::testing::TestWithParam<int> {};

TEST_P(ParallelLayers, ColumnParallelLinearMatchesTheFullLayer) {
  const int n = GetParam();
  auto full = std::make_shared<nn::Linear>(6, 8);
  full->to(kFloat64);
  Tensor x = randn({3, 5, 6}, kFloat64), g = randn({3, 5, 8}, kFloat64);
  Reference ref = run_full_linear(*full, x, g);
  for (bool gather : {false, true}) {
    run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
      const int r = group->rank();
      auto layer = ColumnParallelLinear::from_full(*full, group, {.gather_output = gather});
      Tensor xl = leaf_copy(x);
      Tensor y = layer->forward(xl);
      const Tensor want = gather ? ref.y : slice_of(ref.y, -1, r, n);
      EXPECT_LT(max_abs_diff(y, want), kTolerance) << "gather_output " << gather;
      (y * (gather ? g : slice_of(g, -1, r, n))).sum().backward();
      EXPECT_LT(max_abs_diff(xl.grad(), ref.x_grad), kTolerance) << "input gradient (all-reduced)";
      EXPECT_LT(max_abs_diff(layer->weight.grad(), slice_of(ref.weight_grad, 0, r, n)), kTolerance);
      EXPECT_LT(max_abs_diff(layer->bias.grad(), slice_of(ref.bias_grad, 0, r, n)), kTolerance);
    });
  }
}

TEST_P(ParallelLayers, RowParallelLinearMatchesTheFullLayer) {
  const int n = GetParam();
  auto full = std::make_shared<nn::Linear>(8, 6);
  full->to(kFloat64);
  Tensor x = randn({3, 5, 8}, kFloat64), g = randn({3, 5, 6}, kFloat64);
  Reference ref = run_full_linear(*full, x, g);
  for (bool input_is_parallel : {false, true}) {
    run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
      const int r = group->rank();
      auto layer = RowParallelLinear::from_full(*full, group, {.input_is_parallel = input_is_parallel});
      // Parallel input: this rank's slice of x, as a column-parallel layer hands it over.
      Tensor xl = leaf_copy(input_is_parallel ? slice_of(x, -1, r, n) : x);
      Tensor y = layer->forward(xl);
      EXPECT_LT(max_abs_diff(y, ref.y), kTolerance) << "input_is_parallel " << input_is_parallel;
      (y * g).sum().backward();
      const Tensor want_x_grad = input_is_parallel ? slice_of(ref.x_grad, -1, r, n) : ref.x_grad;
      EXPECT_LT(max_abs_diff(xl.grad(), want_x_grad), kTolerance);
      EXPECT_LT(max_abs_diff(layer->weight.grad(), slice_of(ref.weight_grad, 1, r, n)), kTolerance);
      EXPECT_LT(max_abs_diff(layer->bias.grad(), ref.bias_grad), kTolerance) << "the replicated bias";
    });
  }
}

TEST_P(ParallelLayers, VocabParallelEmbeddingMatchesTheFullLayer) {
  const int n = GetParam();
  auto full = std::make_shared<nn::Embedding>(12, 5);
  full->to(kFloat64);
  // Every rank's range gets ids, and some ids repeat (their gradients add up).
  Tensor ids = randint(0, 12, {4, 7}, kInt64);
  Tensor g = randn({4, 7, 5}, kFloat64);
  Tensor y_ref = full->forward(ids);
  (y_ref * g).sum().backward();
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    auto layer = VocabParallelEmbedding::from_full(*full, group);
    EXPECT_EQ(layer->vocab_start, r * 12 / n);
    Tensor y = layer->forward(ids);
    EXPECT_LT(max_abs_diff(y, y_ref), kTolerance);
    (y * g).sum().backward();
    EXPECT_LT(max_abs_diff(layer->weight.grad(), slice_of(full->weight.grad(), 0, r, n)), kTolerance);
  });
}

TEST_P(ParallelLayers, SizesThatDoNotDivideAreErrorsNamingLayerSizeAndWorld) {
  const int n = GetParam();
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const std::string world = "tensor-parallel size " + std::to_string(n);
    std::string e = error_of([&] { ColumnParallelLinear(4, 4 * n + 1, group); });
    EXPECT_TRUE(contains(
        e, "ColumnParallelLinear: out_features " + std::to_string(4 * n + 1) + " does not divide by the " + world))
        << e;
    e = error_of([&] { RowParallelLinear(4 * n + 1, 4, group); });
    EXPECT_TRUE(contains(e, "RowParallelLinear: in_features " + std::to_string(4 * n + 1))) << e;
    EXPECT_TRUE(contains(e, world)) << e;
    e = error_of([&] { VocabParallelEmbedding(4 * n + 3, 4, group); });
    EXPECT_TRUE(contains(e, "VocabParallelEmbedding: num_embeddings " + std::to_string(4 * n + 3))) << e;

    auto row = std::make_shared<RowParallelLinear>(4 * n, 3, group, RowParallelOptions{.input_is_parallel = true});
    e = error_of([&] { row->forward(zeros({2, 4 * n})); });
    EXPECT_TRUE(contains(
        e, "RowParallelLinear: expected input [..., 4] (this rank's slice), got [2, " + std::to_string(4 * n) + "]"))
        << e;
    VocabParallelEmbedding emb(4 * n, 2, group);
    e = error_of([&] { emb.forward(full({3}, 4 * n, kInt64)); });
    EXPECT_TRUE(contains(e, "ids must be in [0, " + std::to_string(4 * n) + ")")) << e;
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ParallelLayers, ::testing::Values(2, 4));

}  // namespace
}  // namespace anvil::distributed::tensor_parallel
