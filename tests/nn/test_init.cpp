// nn::init: bounds and spreads of each scheme (statistically, on large
// tensors), fans, gains, seeding, and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/init.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

namespace init = nn::init;
using testing::expect_error;
using testing::mean_std;

std::pair<double, double> min_max(const Tensor& t) {
  auto v = t.to_vector<double>();
  return {*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

TEST(NnInit, FansAndGains) {
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({16, 8, 3, 3})), (std::pair<int64_t, int64_t>{72, 144}));
  EXPECT_EQ(init::calculate_fan_in_and_fan_out(empty({10, 20})), (std::pair<int64_t, int64_t>{20, 10}));
  EXPECT_DOUBLE_EQ(init::calculate_gain(init::Nonlinearity::ReLU), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain(init::Nonlinearity::Tanh), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain(init::Nonlinearity::Sigmoid), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain(init::Nonlinearity::LeakyReLU, 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(init::calculate_gain(init::Nonlinearity::SELU), 0.75);
  expect_error([] { init::xavier_uniform_(empty({5})); }, {"at least 2 dims", "[5]"});
}

TEST(NnInit, UniformAndNormal) {
  manual_seed(110);
  Tensor t = empty({200, 300});
  init::uniform_(t, -2.0, 3.0);
  auto [lo, hi] = min_max(t);
  EXPECT_GE(lo, -2.0);
  EXPECT_LT(hi, 3.0);
  EXPECT_LT(lo, -1.99);
  EXPECT_GT(hi, 2.99);
  EXPECT_NEAR(mean_std(t).first, 0.5, 0.02);
  init::normal_(t, 1.5, 0.5);
  auto [mean, sd] = mean_std(t);
  EXPECT_NEAR(mean, 1.5, 0.01);
  EXPECT_NEAR(sd, 0.5, 0.01);
}

TEST(NnInit, KaimingBoundsAndStd) {
  manual_seed(111);
  Tensor w = empty({256, 128, 3, 3}, kFloat64);  // fan_in 1152, fan_out 2304
  init::kaiming_uniform_(w, {.nonlinearity = init::Nonlinearity::ReLU});
  const double bound = std::sqrt(2.0) * std::sqrt(3.0 / 1152.0);
  auto [lo, hi] = min_max(w);
  EXPECT_GE(lo, -bound);
  EXPECT_LE(hi, bound);
  EXPECT_LT(lo, -0.999 * bound);
  EXPECT_GT(hi, 0.999 * bound);
  EXPECT_NEAR(mean_std(w).second, std::sqrt(2.0 / 1152.0), 0.01 * std::sqrt(2.0 / 1152.0));

  init::kaiming_normal_(w, {.mode = init::FanMode::FanOut, .nonlinearity = init::Nonlinearity::ReLU});
  auto [mean, sd] = mean_std(w);
  EXPECT_NEAR(mean, 0.0, 0.01 * sd);
  EXPECT_NEAR(sd, std::sqrt(2.0 / 2304.0), 0.01 * std::sqrt(2.0 / 2304.0));

  // The default (leaky_relu, a = 0) equals relu's gain.
  init::kaiming_uniform_(w);
  EXPECT_LE(min_max(w).second, bound);
  EXPECT_GT(min_max(w).second, 0.999 * bound);
}

TEST(NnInit, XavierStd) {
  manual_seed(112);
  Tensor w = empty({400, 600});
  const double want = std::sqrt(2.0 / 1000.0);
  init::xavier_uniform_(w);
  EXPECT_LE(min_max(w).second, std::sqrt(6.0 / 1000.0));
  EXPECT_NEAR(mean_std(w).second, want, 0.01 * want);
  init::xavier_normal_(w, 2.0);
  EXPECT_NEAR(mean_std(w).second, 2.0 * want, 0.02 * want);
}

TEST(NnInit, TruncatedNormal) {
  manual_seed(113);
  Tensor t = empty({100000}, kFloat64);
  init::trunc_normal_(t);  // N(0, 1) within [-2, 2]
  auto [lo, hi] = min_max(t);
  EXPECT_GE(lo, -2.0);
  EXPECT_LE(hi, 2.0);
  EXPECT_LT(lo, -1.99);
  auto [mean, sd] = mean_std(t);
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(sd, 0.8796, 0.01);  // the std of a standard normal truncated at +-2
  init::trunc_normal_(t, 0.0, 1.0, 0.0, 100.0);  // a half normal: mean sqrt(2/pi)
  EXPECT_GE(min_max(t).first, 0.0);
  EXPECT_NEAR(mean_std(t).first, std::sqrt(2.0 / M_PI), 0.01);
  init::trunc_normal_(t, 3.0, 0.02, 2.96, 3.04);  // bounds are absolute, as PyTorch's
  EXPECT_GE(min_max(t).first, 2.96);
  EXPECT_LE(min_max(t).second, 3.04);
}

TEST(NnInit, SeedingReproduces) {
  Tensor a = empty({50}), b = empty({50});
  manual_seed(7);
  init::normal_(a);
  manual_seed(7);
  init::normal_(b);
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  manual_seed(8);
  init::normal_(b);
  EXPECT_NE(a.to_vector<double>(), b.to_vector<double>());
  manual_seed(7);
  init::trunc_normal_(b);
  auto c = b.to_vector<double>();
  manual_seed(7);
  init::trunc_normal_(b);
  EXPECT_EQ(b.to_vector<double>(), c);
}

TEST(NnInit, ConstantsAndParameters) {
  Tensor p = empty({3, 2}).requires_grad_(true);  // a leaf that requires grad: allowed, as PyTorch
  init::constant_(p, 0.25);
  EXPECT_EQ(p.to_vector<double>(), std::vector<double>(6, 0.25));
  EXPECT_TRUE(p.requires_grad() && p.is_leaf());
  init::ones_(p);
  EXPECT_EQ(p.to_vector<double>(), std::vector<double>(6, 1.0));
  init::zeros_(p);
  EXPECT_EQ(p.to_vector<double>(), std::vector<double>(6, 0.0));
  EXPECT_TRUE(init::normal_(p).same(p));  // returns its argument
  Tensor half = empty({8, 8}, kFloat16);
  init::kaiming_uniform_(half);
  for (double v : half.to_vector<double>()) EXPECT_LE(std::abs(v), std::sqrt(2.0) * std::sqrt(3.0 / 8.0) * 1.001);
  expect_error([] { init::normal_(empty({3}, kInt64)); }, {"normal_", "floating", "int64"});
}

}  // namespace
}  // namespace anvil
