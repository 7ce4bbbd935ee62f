// Activation modules against their formulas; Flatten shapes.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/layers/activation.h"
#include "nn/layers/flatten.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_vec;

std::vector<double> map(const Tensor& x, double (*f)(double)) {
  auto v = x.to_vector<double>();
  for (double& e : v) e = f(e);
  return v;
}

TEST(NnActivation, ModulesMatchFormulas) {
  manual_seed(60);
  Tensor x = randn({3, 5}, kFloat64) * 3.0;
  expect_near_vec(nn::ReLU()(x).to_vector<double>(), map(x, [](double v) { return v > 0 ? v : 0.0; }), 1e-12, "relu");
  expect_near_vec(nn::Tanh()(x).to_vector<double>(), map(x, [](double v) { return std::tanh(v); }), 1e-12, "tanh");
  expect_near_vec(nn::Sigmoid()(x).to_vector<double>(), map(x, [](double v) { return 1 / (1 + std::exp(-v)); }), 1e-12,
                  "sigmoid");
  expect_near_vec(nn::SiLU()(x).to_vector<double>(), map(x, [](double v) { return v / (1 + std::exp(-v)); }), 1e-12,
                  "silu");
  expect_near_vec(nn::GELU()(x).to_vector<double>(),
                  map(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }), 1e-10, "gelu");
  expect_near_vec(
      nn::GELU(GeluApprox::Tanh)(x).to_vector<double>(),
      map(x, [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); }),
      1e-10, "gelu tanh");
  EXPECT_EQ(nn::GELU(GeluApprox::Tanh).extra_repr(), "approximate='tanh'");
  EXPECT_EQ(nn::ReLU().repr(), "ReLU()");
}

TEST(NnFlatten, Shapes) {
  Tensor x = randn({2, 3, 4, 5});
  EXPECT_EQ(nn::Flatten()(x).shape(), (Shape{2, 60}));
  EXPECT_EQ(nn::Flatten(0, 1)(x).shape(), (Shape{6, 4, 5}));
  EXPECT_EQ(nn::Flatten(1, 2)(x).shape(), (Shape{2, 12, 5}));
  EXPECT_EQ(nn::Flatten()(x).to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(nn::Flatten().extra_repr(), "start_dim=1, end_dim=-1");
}

}  // namespace
}  // namespace anvil
