// nn::Linear: forward against a host matmul, default init, gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/layers/linear.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::module_gradcheck;

// y[r, j] = sum_k x[r, k] * w[j, k] + b[j] over the rows of x viewed as [R, in].
std::vector<double> naive_linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  auto bv = b.defined() ? b.to_vector<double>() : std::vector<double>(w.size(0), 0.0);
  const int64_t in = w.size(1), out = w.size(0), rows = x.numel() / in;
  std::vector<double> y(rows * out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < out; ++j) {
      double s = bv[j];
      for (int64_t k = 0; k < in; ++k) s += xv[r * in + k] * wv[j * in + k];
      y[r * out + j] = s;
    }
  return y;
}

TEST(NnLinear, ForwardMatchesHostMatmul) {
  manual_seed(1);
  nn::Linear fc(5, 3);
  Tensor x = randn({4, 5});
  Tensor y = fc.forward(x);
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  expect_near_vec(y.to_vector<double>(), naive_linear(x, fc.weight, fc.bias), 1e-5);

  Tensor x3 = randn({2, 3, 5});  // leading dims are batch dims
  Tensor y3 = fc(x3);
  EXPECT_EQ(y3.shape(), (Shape{2, 3, 3}));
  expect_near_vec(y3.to_vector<double>(), naive_linear(x3, fc.weight, fc.bias), 1e-5);
}

TEST(NnLinear, WithoutBias) {
  manual_seed(2);
  nn::Linear fc(4, 2, /*bias=*/false);
  EXPECT_FALSE(fc.bias.defined());
  EXPECT_EQ(fc.parameters().size(), 1u);
  Tensor x = randn({3, 4});
  expect_near_vec(fc(x).to_vector<double>(), naive_linear(x, fc.weight, {}), 1e-5);
  EXPECT_EQ(fc.extra_repr(), "in_features=4, out_features=2, bias=False");
}

TEST(NnLinear, DefaultInitIsUniformInOneOverSqrtFanIn) {
  manual_seed(3);
  nn::Linear fc(400, 300);
  const double bound = 1.0 / std::sqrt(400.0);
  auto w = fc.weight.to_vector<double>(), b = fc.bias.to_vector<double>();
  double lo = 1, hi = -1;
  for (double v : w) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_GE(lo, -bound);
  EXPECT_LE(hi, bound);
  EXPECT_LT(lo, -0.99 * bound);  // 120000 draws reach near both ends
  EXPECT_GT(hi, 0.99 * bound);
  auto [mean, sd] = testing::mean_std(fc.weight);
  EXPECT_NEAR(mean, 0.0, 0.01 * bound);
  EXPECT_NEAR(sd, bound / std::sqrt(3.0), 0.01 * bound);
  for (double v : b) EXPECT_LE(std::abs(v), bound);
  EXPECT_TRUE(fc.weight.requires_grad());
  EXPECT_TRUE(fc.weight.is_leaf());
}

TEST(NnLinear, GradientsMatchFiniteDifferences) {
  manual_seed(4);
  nn::Linear fc(3, 4);
  fc.to(kFloat64);
  EXPECT_TRUE(module_gradcheck(fc, randn({2, 3}, kFloat64)));
  nn::Linear nobias(3, 2, false);
  nobias.to(kFloat64);
  EXPECT_TRUE(module_gradcheck(nobias, randn({2, 2, 3}, kFloat64)));
}

TEST(NnLinear, WrongInputSizeNamesTheExpectedShape) {
  nn::Linear fc(5, 3);
  expect_error([&] { fc(randn({2, 4})); }, {"Linear", "[..., 5]", "[2, 4]"});
}

}  // namespace
}  // namespace anvil
