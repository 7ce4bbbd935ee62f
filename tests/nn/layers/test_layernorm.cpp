// nn::LayerNorm: forward against hand-computed row statistics, options,
// gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/layers/layernorm.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_vec;
using testing::module_gradcheck;

// Normalises each run of `inner` consecutive values, then applies w and b.
std::vector<double> naive_layer_norm(const Tensor& xt, int64_t inner, const std::vector<double>& w,
                                     const std::vector<double>& b, double eps) {
  auto x = xt.to_vector<double>();
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / inner; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i) mean += x[r * inner + i] / inner;
    for (int64_t i = 0; i < inner; ++i) var += std::pow(x[r * inner + i] - mean, 2) / inner;
    for (int64_t i = 0; i < inner; ++i)
      y[r * inner + i] =
          (x[r * inner + i] - mean) / std::sqrt(var + eps) * (w.empty() ? 1.0 : w[i]) + (b.empty() ? 0.0 : b[i]);
  }
  return y;
}

TEST(NnLayerNorm, ForwardMatchesRowStatistics) {
  manual_seed(30);
  nn::LayerNorm ln(6);
  EXPECT_EQ(ln.weight.to_vector<double>(), std::vector<double>(6, 1.0));
  EXPECT_EQ(ln.bias.to_vector<double>(), std::vector<double>(6, 0.0));
  {
    NoGradGuard ng;
    ln.weight.copy_(randn({6}));
    ln.bias.copy_(randn({6}));
  }
  Tensor x = randn({2, 3, 6}) * 3.0 + 1.0;
  expect_near_vec(ln(x).to_vector<double>(),
                  naive_layer_norm(x, 6, ln.weight.to_vector<double>(), ln.bias.to_vector<double>(), 1e-5), 1e-4);
  EXPECT_EQ(ln.extra_repr(), "(6,), eps=1e-05, elementwise_affine=True");
}

TEST(NnLayerNorm, SeveralDimsAndNoAffine) {
  manual_seed(31);
  nn::LayerNorm ln({.normalized_shape = {3, 4}, .eps = 1e-3, .elementwise_affine = false});
  EXPECT_TRUE(ln.parameters().empty());
  Tensor x = randn({5, 3, 4});
  expect_near_vec(ln(x).to_vector<double>(), naive_layer_norm(x, 12, {}, {}, 1e-3), 1e-4);

  nn::LayerNorm nobias({.normalized_shape = {4}, .bias = false});
  EXPECT_EQ(testing::names_of(nobias.named_parameters()), (std::vector<std::string>{"weight"}));
}

TEST(NnLayerNorm, GradientsMatchFiniteDifferences) {
  manual_seed(32);
  nn::LayerNorm ln({.normalized_shape = {2, 3}});
  ln.to(kFloat64);
  {
    NoGradGuard ng;
    ln.weight.copy_(randn({2, 3}, kFloat64));
    ln.bias.copy_(randn({2, 3}, kFloat64));
  }
  EXPECT_TRUE(module_gradcheck(ln, randn({2, 2, 3}, kFloat64)));
}

TEST(NnLayerNorm, WrongTrailingShape) {
  nn::LayerNorm ln(4);
  EXPECT_THROW(ln(randn({2, 5})), Error);
}

}  // namespace
}  // namespace anvil
