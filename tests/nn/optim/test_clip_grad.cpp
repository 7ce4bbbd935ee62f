// Gradient clipping against norms computed with plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "nn/optim/clip_grad.h"
#include "optim_test_util.h"

namespace anvil::nn::optim::test {
namespace {

struct ClipCase {
  std::vector<Tensor> params;
  std::vector<Vec> grads;  // of the parameters that have one
};

// Three parameters with gradients (scaled up so the norm is well above 1) and one without.
ClipCase make_setup(DType dtype = kFloat64) {
  manual_seed(31);
  ClipCase s;
  for (const Shape& shape : {Shape{3, 4}, Shape{5}, Shape{2, 2, 2}}) {
    Tensor p = random_param(shape, dtype);
    p.set_grad(randn(shape, TensorOptions().dtype(dtype)) * 3.0);
    s.params.push_back(p);
    s.grads.push_back(values(p.grad()));
  }
  s.params.push_back(random_param({4}, dtype));  // no gradient: ignored
  return s;
}

double naive_norm(const std::vector<Vec>& grads, double p) {
  double acc = 0;
  for (const Vec& g : grads)
    for (double x : g) acc = std::isinf(p) ? std::max(acc, std::abs(x)) : acc + std::pow(std::abs(x), p);
  return std::isinf(p) ? acc : std::pow(acc, 1.0 / p);
}

void expect_scaled(const ClipCase& s, double coef, double tol) {
  for (size_t i = 0; i < s.grads.size(); ++i) {
    Vec expected = s.grads[i];
    for (double& x : expected) x *= coef;
    expect_near(values(s.params[i].grad()), expected, tol);
  }
  EXPECT_FALSE(s.params.back().grad().defined());
}

TEST(ClipGradNorm, ReturnsTheGlobalNormAndScalesToMaxNorm) {
  ClipCase s = make_setup();
  const double expected_total = naive_norm(s.grads, 2.0);
  ASSERT_GT(expected_total, 2.0);
  const double total = clip_grad_norm_(s.params, 1.5);
  EXPECT_NEAR(total, expected_total, 1e-12 * expected_total);
  expect_scaled(s, 1.5 / (expected_total + 1e-6), 1e-13);
  // The clipped gradients have norm max_norm (up to the 1e-6 guard).
  std::vector<Vec> clipped;
  for (size_t i = 0; i < s.grads.size(); ++i) clipped.push_back(values(s.params[i].grad()));
  EXPECT_NEAR(naive_norm(clipped, 2.0), 1.5, 1e-6);
}

TEST(ClipGradNorm, LeavesSmallGradientsAlone) {
  ClipCase s = make_setup();
  const double total = clip_grad_norm_(s.params, 1e6);
  EXPECT_NEAR(total, naive_norm(s.grads, 2.0), 1e-10);
  expect_scaled(s, 1.0, 0.0);
}

TEST(ClipGradNorm, OtherNormTypes) {
  for (double p : {1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    ClipCase s = make_setup();
    const double expected_total = naive_norm(s.grads, p);
    const double total = clip_grad_norm_(s.params, 0.5, p);
    EXPECT_NEAR(total, expected_total, 1e-12 * expected_total) << "p = " << p;
    expect_scaled(s, 0.5 / (expected_total + 1e-6), 1e-12);
  }
}

TEST(ClipGradNorm, Float32Gradients) {
  ClipCase s = make_setup(kFloat32);
  const double expected_total = naive_norm(s.grads, 2.0);
  const double total = clip_grad_norm_(s.params, 1.0);
  EXPECT_NEAR(total, expected_total, 1e-5 * expected_total);
  expect_scaled(s, 1.0 / (expected_total + 1e-6), 1e-5);
}

TEST(ClipGradNorm, NonFiniteNormIsReturnedAndGradientsKept) {
  ClipCase s = make_setup();
  Tensor g = s.params[1].grad();
  Tensor bad = from_vector<double>({1.0, std::numeric_limits<double>::infinity(), 0.0, 2.0, 3.0}, {5});
  g.copy_(bad);
  s.grads[1] = values(bad);
  EXPECT_TRUE(std::isinf(clip_grad_norm_(s.params, 1.0)));
  expect_scaled(s, 1.0, 0.0);

  bad = from_vector<double>({1.0, std::nan(""), 0.0, 2.0, 3.0}, {5});
  g.copy_(bad);
  EXPECT_TRUE(std::isnan(clip_grad_norm_(s.params, 1.0)));
}

TEST(ClipGradNorm, NoGradientsGiveZero) {
  EXPECT_EQ(clip_grad_norm_({random_param({3})}, 1.0), 0.0);
  EXPECT_THROW(clip_grad_norm_({random_param({3})}, -1.0), Error);
  EXPECT_THROW(clip_grad_norm_({random_param({3})}, 1.0, 0.0), Error);
}

TEST(ClipGradValue, ClampsEveryElement) {
  ClipCase s = make_setup();
  clip_grad_value_(s.params, 0.7);
  for (size_t i = 0; i < s.grads.size(); ++i) {
    Vec expected = s.grads[i];
    for (double& x : expected) x = std::clamp(x, -0.7, 0.7);
    expect_near(values(s.params[i].grad()), expected, 0.0);
  }
  EXPECT_THROW(clip_grad_value_(s.params, -1.0), Error);
}

}  // namespace
}  // namespace anvil::nn::optim::test
