// nn::BatchNorm2d: training against hand-computed batch statistics and the
// running-stat update (momentum, unbiased variance, cumulative average),
// eval with the running statistics, options, gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/layers/batchnorm.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::module_gradcheck;

struct Stats {
  std::vector<double> mean, biased_var, unbiased_var;
};

Stats channel_stats(const Tensor& xt) {
  auto x = xt.to_vector<double>();
  const int64_t N = xt.size(0), C = xt.size(1), HW = xt.size(2) * xt.size(3), count = N * HW;
  Stats s;
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0, sq = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i) sum += x[(n * C + c) * HW + i];
    const double mean = sum / count;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i) sq += std::pow(x[(n * C + c) * HW + i] - mean, 2);
    s.mean.push_back(mean);
    s.biased_var.push_back(sq / count);
    s.unbiased_var.push_back(sq / (count - 1));
  }
  return s;
}

std::vector<double> normalized(const Tensor& xt, const std::vector<double>& mean, const std::vector<double>& var,
                               const std::vector<double>& w, const std::vector<double>& b, double eps) {
  auto x = xt.to_vector<double>();
  const int64_t N = xt.size(0), C = xt.size(1), HW = xt.size(2) * xt.size(3);
  std::vector<double> y(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < HW; ++i) {
        const int64_t k = (n * C + c) * HW + i;
        y[k] = (x[k] - mean[c]) / std::sqrt(var[c] + eps) * w[c] + b[c];
      }
  return y;
}

TEST(NnBatchNorm2d, DefaultsAndState) {
  nn::BatchNorm2d bn(3);
  EXPECT_EQ(testing::names_of(bn.named_parameters()), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(testing::names_of(bn.named_buffers()),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(bn.weight.to_vector<double>(), std::vector<double>(3, 1.0));
  EXPECT_EQ(bn.bias.to_vector<double>(), std::vector<double>(3, 0.0));
  EXPECT_EQ(bn.running_mean.to_vector<double>(), std::vector<double>(3, 0.0));
  EXPECT_EQ(bn.running_var.to_vector<double>(), std::vector<double>(3, 1.0));
  EXPECT_EQ(bn.num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(bn.num_batches_tracked.dim(), 0);
  EXPECT_EQ(bn.extra_repr(), "3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True");
}

TEST(NnBatchNorm2d, TrainingUsesBatchStatsAndUpdatesRunningStats) {
  manual_seed(20);
  nn::BatchNorm2d bn({.num_features = 3, .eps = 1e-3, .momentum = 0.2});
  bn.to(kFloat64);
  {
    NoGradGuard ng;  // non-trivial affine parameters
    bn.weight.copy_(randn({3}, kFloat64));
    bn.bias.copy_(randn({3}, kFloat64));
  }
  auto w = bn.weight.to_vector<double>(), b = bn.bias.to_vector<double>();
  Tensor x1 = randn({4, 3, 2, 5}, kFloat64) * 2.0 + 0.5;
  Tensor x2 = randn({4, 3, 2, 5}, kFloat64) - 1.0;
  Stats s1 = channel_stats(x1), s2 = channel_stats(x2);

  expect_near_vec(bn(x1).to_vector<double>(), normalized(x1, s1.mean, s1.biased_var, w, b, 1e-3), 1e-9, "out");
  std::vector<double> rm(3), rv(3);
  for (int c = 0; c < 3; ++c) {
    rm[c] = 0.8 * 0.0 + 0.2 * s1.mean[c];
    rv[c] = 0.8 * 1.0 + 0.2 * s1.unbiased_var[c];
  }
  expect_near_vec(bn.running_mean.to_vector<double>(), rm, 1e-9, "running_mean after 1");
  expect_near_vec(bn.running_var.to_vector<double>(), rv, 1e-9, "running_var after 1");
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);

  bn(x2);
  for (int c = 0; c < 3; ++c) {
    rm[c] = 0.8 * rm[c] + 0.2 * s2.mean[c];
    rv[c] = 0.8 * rv[c] + 0.2 * s2.unbiased_var[c];
  }
  expect_near_vec(bn.running_mean.to_vector<double>(), rm, 1e-9, "running_mean after 2");
  expect_near_vec(bn.running_var.to_vector<double>(), rv, 1e-9, "running_var after 2");
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 2);
}

TEST(NnBatchNorm2d, EvalUsesRunningStatsAndLeavesThemAlone) {
  manual_seed(21);
  nn::BatchNorm2d bn(2);
  {
    NoGradGuard ng;
    bn.running_mean.copy_(tensor({0.5, -1.0}));
    bn.running_var.copy_(tensor({2.0, 0.25}));
    bn.weight.copy_(tensor({1.5, -0.5}));
    bn.bias.copy_(tensor({0.1, 0.2}));
  }
  bn.eval();
  Tensor x = randn({3, 2, 4, 4});
  expect_near_vec(bn(x).to_vector<double>(), normalized(x, {0.5, -1.0}, {2.0, 0.25}, {1.5, -0.5}, {0.1, 0.2}, 1e-5),
                  1e-5);
  EXPECT_EQ(bn.running_mean.to_vector<double>(), (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(bn.running_var.to_vector<double>(), (std::vector<double>{2.0, 0.25}));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 0);
}

TEST(NnBatchNorm2d, MomentumNoneIsCumulativeAverage) {
  manual_seed(22);
  nn::BatchNorm2d bn({.num_features = 2, .momentum = std::nullopt});
  bn.to(kFloat64);
  std::vector<Stats> stats;
  for (int i = 0; i < 3; ++i) {
    Tensor x = randn({2, 2, 3, 3}, kFloat64) + static_cast<double>(i);
    stats.push_back(channel_stats(x));
    bn(x);
  }
  std::vector<double> mean(2, 0.0), var(2, 0.0);
  for (int c = 0; c < 2; ++c) {
    for (auto& s : stats) mean[c] += s.mean[c] / 3, var[c] += s.unbiased_var[c] / 3;
  }
  expect_near_vec(bn.running_mean.to_vector<double>(), mean, 1e-9);
  expect_near_vec(bn.running_var.to_vector<double>(), var, 1e-9);
  EXPECT_NE(bn.extra_repr().find("momentum=None"), std::string::npos);
}

TEST(NnBatchNorm2d, WithoutAffineOrRunningStats) {
  manual_seed(23);
  nn::BatchNorm2d bn({.num_features = 2, .affine = false, .track_running_stats = false});
  EXPECT_TRUE(bn.parameters().empty());
  EXPECT_TRUE(bn.buffers().empty());
  Tensor x = randn({3, 2, 2, 2}, kFloat64);
  bn.to(kFloat64);
  Stats s = channel_stats(x);
  auto want = normalized(x, s.mean, s.biased_var, {1, 1}, {0, 0}, 1e-5);
  expect_near_vec(bn(x).to_vector<double>(), want, 1e-9, "train");
  bn.eval();  // still batch statistics: there are no running ones
  expect_near_vec(bn(x).to_vector<double>(), want, 1e-9, "eval");
}

TEST(NnBatchNorm2d, ToFloat64KeepsTheCounterInteger) {
  nn::BatchNorm2d bn(2);
  bn.to(kFloat64);
  EXPECT_EQ(bn.running_mean.dtype(), kFloat64);
  EXPECT_EQ(bn.weight.dtype(), kFloat64);
  EXPECT_EQ(bn.num_batches_tracked.dtype(), kInt64);
}

TEST(NnBatchNorm2d, GradientsMatchFiniteDifferences) {
  manual_seed(24);
  nn::BatchNorm2d bn(2);
  bn.to(kFloat64);
  {
    NoGradGuard ng;
    bn.weight.copy_(randn({2}, kFloat64));
  }
  EXPECT_TRUE(module_gradcheck(bn, randn({3, 2, 2, 2}, kFloat64)));
  bn.eval();
  EXPECT_TRUE(module_gradcheck(bn, randn({3, 2, 2, 2}, kFloat64)));
}

TEST(NnBatchNorm2d, WrongInput) {
  nn::BatchNorm2d bn(3);
  expect_error([&] { bn(randn({2, 4, 3, 3})); }, {"BatchNorm2d", "[N, 3, H, W]", "[2, 4, 3, 3]"});
  expect_error([&] { bn(randn({2, 3})); }, {"BatchNorm2d", "[2, 3]"});
}

}  // namespace
}  // namespace anvil
