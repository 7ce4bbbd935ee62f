// nn::Checkpointed: the same outputs and gradients as the plain module,
// with dropout replayed in the recomputation.
#include <gtest/gtest.h>

#include "nn/layers/checkpointed.h"
#include "nn/layers/container.h"
#include "nn/layers/transformer.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_vec;

// Two copies of the same blocks, one plain and one checkpointed.
struct Pair {
  std::shared_ptr<nn::Sequential> plain = std::make_shared<nn::Sequential>();
  std::shared_ptr<nn::Sequential> checkpointed = std::make_shared<nn::Sequential>();
};

Pair make_pair(const nn::TransformerOptions& o, int layers) {
  Pair p;
  for (int i = 0; i < layers; ++i) {
    auto block = std::make_shared<nn::TransformerBlock>(o);
    auto twin = std::make_shared<nn::TransformerBlock>(o);
    twin->load_state_dict(block->state_dict());
    p.plain->push_back(block);
    p.checkpointed->push_back(std::make_shared<nn::Checkpointed>(twin));
  }
  return p;
}

void expect_same_grads(nn::Module& a, nn::Module& b, double tol) {
  auto pa = a.parameters(), pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    ASSERT_TRUE(pa[i].grad().defined() && pb[i].grad().defined()) << "parameter " << i;
    expect_near_vec(pb[i].grad().to_vector<double>(), pa[i].grad().to_vector<double>(), tol,
                    "parameter " + std::to_string(i));
  }
}

TEST(NnCheckpointed, SameOutputAndGradientsAsThePlainModule) {
  manual_seed(90);
  Pair p = make_pair({.n_embd = 8, .n_head = 2}, 2);
  EXPECT_EQ(testing::names_of(p.checkpointed->named_parameters()).front(), "0.module.ln1.weight");
  Tensor x = randn({2, 5, 8});
  Tensor xa = x.clone().requires_grad_(true), xb = x.clone().requires_grad_(true);
  Tensor ya = p.plain->forward(xa), yb = p.checkpointed->forward(xb);
  expect_near_vec(yb.to_vector<double>(), ya.to_vector<double>(), 1e-6, "output");
  Tensor w = randn(ya.shape());
  (ya * w).sum().backward();
  (yb * w).sum().backward();
  expect_near_vec(xb.grad().to_vector<double>(), xa.grad().to_vector<double>(), 1e-5, "input grad");
  expect_same_grads(*p.plain, *p.checkpointed, 1e-5);
}

TEST(NnCheckpointed, DropoutIsReplayedInTheRecomputation) {
  manual_seed(91);
  Pair p = make_pair({.n_embd = 8, .n_head = 2, .dropout = 0.3}, 1);
  Tensor x = randn({2, 4, 8});
  Tensor w = randn({2, 4, 8});
  manual_seed(5);
  (p.plain->forward(x) * w).sum().backward();
  manual_seed(5);
  (p.checkpointed->forward(x) * w).sum().backward();
  expect_same_grads(*p.plain, *p.checkpointed, 1e-5);
}

TEST(NnCheckpointed, ParametersGetGradientsWhenTheInputNeedsNone) {
  manual_seed(92);
  auto fc = std::make_shared<nn::Linear>(3, 2);
  nn::Checkpointed ck(fc);
  Tensor x = randn({4, 3});
  ck(x).sum().backward();
  ASSERT_TRUE(fc->weight.grad().defined());
  // d/dW sum(x W^T + b) = column sums of x, for every output row.
  auto cols = x.sum({0}).to_vector<double>();
  expect_near_vec(fc->weight.grad().to_vector<double>(), {cols[0], cols[1], cols[2], cols[0], cols[1], cols[2]}, 1e-5);
  expect_near_vec(fc->bias.grad().to_vector<double>(), {4, 4}, 1e-6);
}

TEST(NnCheckpointed, NoGraphUnderNoGrad) {
  nn::Checkpointed ck(std::make_shared<nn::Linear>(3, 2));
  NoGradGuard ng;
  EXPECT_FALSE(ck(randn({1, 3})).requires_grad());
}

}  // namespace
}  // namespace anvil
