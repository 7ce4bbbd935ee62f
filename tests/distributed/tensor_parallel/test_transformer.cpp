// ParallelMLP, ParallelSelfAttention and ParallelTransformerBlock built from
// a single-process nn::TransformerBlock on 2 and 4 rank threads: outputs,
// input gradients and every parameter gradient (this rank's slice) equal
// the unsplit block's on random float64 inputs; also with sequence
// parallelism, where each rank holds T/n steps; bad head counts and dropout
// are errors.
#include <gtest/gtest.h>

#include <string>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "distributed/tensor_parallel/transformer.h"
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

constexpr double kTolerance = 1e-10;  // float64
const nn::TransformerOptions kOptions{.n_embd = 8, .n_head = 4};

std::shared_ptr<nn::TransformerBlock> random_block() {
  auto block = std::make_shared<nn::TransformerBlock>(kOptions);
  block->to(kFloat64);
  // Non-trivial LayerNorm affines, so their gradients and slices matter.
  NoGradGuard no_grad;
  for (auto& [name, p] : block->named_parameters())
    if (name.starts_with("ln")) p.copy_(randn(p.shape(), kFloat64));
  return block;
}

// A block of the same shape whose parameters are `full`'s gradients: sliced
// by from_full, it gives each rank's expected parameter gradients.
std::shared_ptr<nn::TransformerBlock> gradients_of(const nn::TransformerBlock& full) {
  auto grads = std::make_shared<nn::TransformerBlock>(kOptions);
  grads->to(kFloat64);
  auto from = full.named_parameters();
  auto to = grads->named_parameters();
  NoGradGuard no_grad;
  for (size_t i = 0; i < from.size(); ++i) {
    const Tensor grad = from[i].second.grad();  // none outside the part a reference ran
    if (grad.defined())
      to[i].second.copy_(grad);
    else
      to[i].second.zero_();
  }
  return grads;
}

void expect_same_gradients(const nn::Module& parallel, const nn::Module& expected) {
  auto got = parallel.named_parameters();
  auto want = expected.named_parameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].second.grad().defined()) << got[i].first;
    EXPECT_LT(max_abs_diff(got[i].second.grad(), want[i].second), kTolerance) << got[i].first;
  }
}

class ParallelTransformer : public ::testing::TestWithParam<int> {};

TEST_P(ParallelTransformer, MlpAttentionAndBlockMatchTheFullBlock) {
  const int n = GetParam();
  auto full = random_block();
  Tensor x = randn({2, 4, 8}, kFloat64), g = randn({2, 4, 8}, kFloat64);
  // The three parts, each on its own: reference outputs and gradients.
  struct Part {
    Tensor y, x_grad;
    std::shared_ptr<nn::TransformerBlock> grads;
  };
  auto reference = [&](const std::function<Tensor(const Tensor&)>& f) {
    full->zero_grad();
    Tensor xl = leaf_copy(x);
    Tensor y = f(xl);
    (y * g).sum().backward();
    return Part{y.detach(), xl.grad(), gradients_of(*full)};
  };
  Part mlp = reference([&](const Tensor& in) { return full->mlp->forward(in); });
  Part attn = reference([&](const Tensor& in) { return full->attn->forward(in); });
  Part block = reference([&](const Tensor& in) { return full->forward(in); });

  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    auto check = [&](nn::Module& layer, const Part& want, const nn::Module& want_grads, const char* what) {
      Tensor xl = leaf_copy(x);
      Tensor y = layer.forward(xl);
      EXPECT_LT(max_abs_diff(y, want.y), kTolerance) << what;
      (y * g).sum().backward();
      EXPECT_LT(max_abs_diff(xl.grad(), want.x_grad), kTolerance) << what;
      expect_same_gradients(layer, want_grads);
    };
    auto p_mlp = ParallelMLP::from_full(*full->mlp, group);
    check(*p_mlp, mlp, *ParallelMLP::from_full(*mlp.grads->mlp, group), "mlp");
    auto p_attn = ParallelSelfAttention::from_full(*full->attn, group);
    EXPECT_EQ(p_attn->heads_per_rank, 4 / n);
    check(*p_attn, attn, *ParallelSelfAttention::from_full(*attn.grads->attn, group), "attention");
    auto p_block = ParallelTransformerBlock::from_full(*full, group);
    check(*p_block, block, *ParallelTransformerBlock::from_full(*block.grads, group), "block");
  });
}

TEST_P(ParallelTransformer, SequenceParallelBlockMatchesOnEachRanksSteps) {
  const int n = GetParam();
  auto full = random_block();
  Tensor x = randn({2, 8, 8}, kFloat64), g = randn({2, 8, 8}, kFloat64);
  Tensor xl = leaf_copy(x);
  Tensor y = full->forward(xl);
  (y * g).sum().backward();
  auto grads = gradients_of(*full);
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    const int r = group->rank();
    const ParallelOptions sp{.sequence_parallel = true};
    auto block = ParallelTransformerBlock::from_full(*full, group, sp);
    Tensor mine = leaf_copy(slice_of(x, 1, r, n));  // [2, 8/n, 8]: this rank's steps
    Tensor out = block->forward(mine);
    EXPECT_LT(max_abs_diff(out, slice_of(y, 1, r, n)), kTolerance);
    (out * slice_of(g, 1, r, n)).sum().backward();
    EXPECT_LT(max_abs_diff(mine.grad(), slice_of(xl.grad(), 1, r, n)), kTolerance);
    // Before the sum over ranks a LayerNorm weight's gradient is this rank's share only.
    EXPECT_GT(max_abs_diff(block->ln1->weight.grad(), grads->ln1->weight), 1e-3);
    all_reduce_sequence_parallel_grads(block->sequence_parallel_parameters(), *group);
    expect_same_gradients(*block, *ParallelTransformerBlock::from_full(*grads, group, sp));
  });
}

TEST_P(ParallelTransformer, HeadsThatDoNotDivideAndDropoutAreErrors) {
  const int n = GetParam();
  run_ranks(n, [&](std::shared_ptr<ProcessGroup> group) {
    std::string e = error_of([&] { ParallelSelfAttention({.n_embd = 6 * n + 3, .n_head = n + 1}, group); });
    EXPECT_TRUE(contains(e, "ParallelSelfAttention: n_head " + std::to_string(n + 1) +
                                " does not divide by the tensor-parallel size " + std::to_string(n)))
        << e;
    e = error_of([&] { ParallelTransformerBlock({.n_embd = 8, .n_head = 4, .dropout = 0.1}, group); });
    EXPECT_TRUE(contains(e, "ParallelTransformerBlock: dropout 0.1 is not supported")) << e;
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ParallelTransformer, ::testing::Values(2, 4));

}  // namespace
}  // namespace anvil::distributed::tensor_parallel
