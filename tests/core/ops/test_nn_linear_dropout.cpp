// linear and dropout: forward against loops, gradients, the dropout mask's
// statistics and determinism under a seed, bad arguments.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/core/ops/nn_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::first_grad;
using testing::gradcheck;
using testing::randn64;

// out[r, o] = sum_i x[r, i] * w[o, i] + b[o] over the rows of x [*, in].
std::vector<double> naive_linear(const Tensor& xt, const Tensor& wt, const Tensor& bt) {
  auto x = xt.to_vector<double>(), w = wt.to_vector<double>();
  auto b = bt.defined() ? bt.to_vector<double>() : std::vector<double>(wt.size(0), 0.0);
  const int64_t in = wt.size(1), out = wt.size(0), rows = xt.numel() / in;
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = b[o];
      for (int64_t i = 0; i < in; ++i) acc += x[r * in + i] * w[o * in + i];
      y.push_back(acc);
    }
  return y;
}

TEST(NnLinear, ForwardMatchesLoops) {
  manual_seed(71);
  Tensor w = randn64({5, 3}), b = randn64({5});
  Tensor x3 = randn64({2, 4, 3});
  Tensor y = linear(x3, w, b);
  EXPECT_EQ(y.shape(), (Shape{2, 4, 5}));
  expect_near_vec(y.to_vector<double>(), naive_linear(x3, w, b), 1e-12);
  Tensor x1 = randn64({3});
  Tensor y1 = linear(x1, w);
  EXPECT_EQ(y1.shape(), (Shape{5}));
  expect_near_vec(y1.to_vector<double>(), naive_linear(x1, w, {}), 1e-12);
  Tensor xt = randn64({3, 4}).t();  // non-contiguous rows
  expect_near_vec(linear(xt, w, b).to_vector<double>(), naive_linear(xt.contiguous(), w, b), 1e-12);
}

TEST(NnLinear, GradcheckAndDoubleBackward) {
  manual_seed(72);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return linear(t[0], t[1], t[2]); },
                        {randn64({2, 3, 4}), randn64({2, 4}), randn64({2})}))
      << "batched input with bias";
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& t) { return linear(t[0], t[1]); }, {randn64({4}), randn64({3, 4})}))
      << "1-D input without bias";
  auto f = [](const std::vector<Tensor>& t) { return linear(t[0], t[1], t[2]).tanh(); };
  std::vector<Tensor> in{randn64({3, 4}), randn64({2, 4}), randn64({2})};
  Tensor wy = randn64({3, 2});
  for (size_t which : {0u, 1u})
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return first_grad(f, t, which, wy); }, in))
        << "d/d(input " << which << ")";
}

TEST(NnLinear, RejectsBadArguments) {
  Tensor x = randn({2, 3}), w = randn({4, 3});
  expect_error([&] { linear(x, randn({4, 2})); }, {"linear", "3 features", "expects 2"});
  expect_error([&] { linear(x, randn({12})); }, {"linear", "weight", "[12]"});
  expect_error([&] { linear(x, w, randn({3})); }, {"linear", "bias", "[4]"});
  expect_error([&] { linear(x, w.to(kFloat64)); }, {"linear", "same dtype"});
  expect_error([&] { linear(x.to(kInt64), w); }, {"linear", "floating"});
  expect_error([&] { linear(scalar_tensor(1.0), w); }, {"linear", "0-d"});
}

// --- dropout ---

TEST(NnDropout, ZeroesAboutPAndScalesTheRest) {
  manual_seed(81);
  const double p = 0.3;
  Tensor x = rand({200, 50}) + 0.5;  // never zero, so zeros in the output are dropped elements
  Tensor y = dropout(x, p);
  auto vx = x.to_vector<double>(), vy = y.to_vector<double>();
  int64_t dropped = 0;
  for (size_t i = 0; i < vx.size(); ++i) {
    if (vy[i] == 0.0) {
      ++dropped;
    } else {
      EXPECT_NEAR(vy[i], vx[i] / (1 - p), 1e-5) << "element " << i;
    }
  }
  const double frac = static_cast<double>(dropped) / static_cast<double>(vx.size());
  EXPECT_NEAR(frac, p, 0.02);  // 10000 draws: std of the fraction is about 0.005
}

TEST(NnDropout, SameSeedSameMaskAndGradientIsMaskOverKeep) {
  const double p = 0.4;
  Tensor x = rand({7, 9}, kFloat64) + 0.5;
  manual_seed(1234);
  Tensor xa = x.clone().requires_grad_();
  Tensor ya = dropout(xa, p);
  manual_seed(1234);
  Tensor yb = dropout(x, p);
  expect_near_vec(ya.to_vector<double>(), yb.to_vector<double>(), 0);
  // A different draw (the generator moved on) gives a different mask.
  Tensor yc = dropout(x, p);
  EXPECT_GT(testing::max_abs_diff(yb, yc), 0.0);

  Tensor wy = randn64({7, 9});
  (ya * wy).sum().backward();
  auto g = xa.grad().to_vector<double>(), y = ya.to_vector<double>(), w = wy.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    const double mask = y[i] != 0.0 ? 1.0 : 0.0;
    EXPECT_NEAR(g[i], w[i] * mask / (1 - p), 1e-12) << "element " << i;
  }
}

TEST(NnDropout, IdentityWhenNotTrainingOrPZero) {
  Tensor x = randn({4, 4});
  EXPECT_TRUE(dropout(x, 0.5, false).same(x));
  EXPECT_TRUE(dropout(x, 0.0).same(x));
}

TEST(NnDropout, RejectsBadArguments) {
  Tensor x = randn({3});
  expect_error([&] { dropout(x, 1.0); }, {"dropout", "[0, 1)", "1"});
  expect_error([&] { dropout(x, -0.1); }, {"dropout", "-0.1"});
  expect_error([&] { dropout(x.to(kInt64), 0.5); }, {"dropout", "floating"});
}

}  // namespace
}  // namespace anvil
