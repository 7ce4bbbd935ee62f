// cumsum, cumprod and logcumsumexp (core/ops/scan.h): values against a naive
// loop over host values, PyTorch's dtype rules, gradients (cumprod through
// zeros included) against finite differences, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/ops.h"
#include "tests/core/gradcheck.h"
#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::gradcheck;

// The naive scan of a contiguous [rows, n] tensor's rows.
std::vector<double> naive_rows(const std::vector<double>& x, int64_t rows, int64_t n, int op) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double acc = op == 0 ? 0.0 : op == 1 ? 1.0 : -INFINITY;
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[r * n + i];
      acc = op == 0 ? acc + v : op == 1 ? acc * v : std::log(std::exp(acc) + std::exp(v));
      y[r * n + i] = acc;
    }
  }
  return y;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "at " << i;
}

TEST(Scan, MatchesANaiveLoopAlongEveryDim) {
  manual_seed(3);
  const Tensor x = randn({4, 5, 6}, kFloat64);
  for (int64_t dim : {0, 1, 2, -1}) {
    const int64_t d = dim < 0 ? dim + 3 : dim;
    // Move dim last, scan the rows naively, compare with the op moved the same way.
    const Tensor moved = x.transpose(d, 2).contiguous();
    const int64_t n = moved.size(2), rows = moved.numel() / n;
    const std::vector<double> v = moved.to_vector<double>();
    for (int op = 0; op < 3; ++op) {
      const Tensor y = op == 0 ? cumsum(x, dim) : op == 1 ? cumprod(x, dim) : logcumsumexp(x, dim);
      EXPECT_EQ(y.shape(), x.shape());
      expect_near_all(y.transpose(d, 2).contiguous().to_vector<double>(), naive_rows(v, rows, n, op), 1e-12);
    }
  }
}

TEST(Scan, IntegersAndBoolAccumulateInInt64AsPyTorch) {
  const Tensor b = from_vector<int64_t>({1, 0, 1, 1}).to(kBool);
  EXPECT_EQ(cumsum(b, 0).dtype(), kInt64);
  EXPECT_EQ(cumsum(b, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 2, 3}));
  const Tensor i = from_vector<int32_t>({2, -3, 4}, {3});
  EXPECT_EQ(cumprod(i, 0).dtype(), kInt64);
  EXPECT_EQ(cumprod(i, 0).to_vector<int64_t>(), (std::vector<int64_t>{2, -6, -24}));
  EXPECT_EQ(cumsum(i, 0, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(i.cumsum(0).to_vector<int64_t>(), (std::vector<int64_t>{2, -1, 3}));
  EXPECT_EQ(cumsum(from_vector<float>({1.5f, 2.0f}), 0).dtype(), kFloat32);
}

TEST(Scan, LogcumsumexpIsStableAndHandlesInfinities) {
  const Tensor x = from_vector<double>({1000.0, 1000.0, -INFINITY, 0.0});
  const std::vector<double> y = logcumsumexp(x, 0).to_vector<double>();
  EXPECT_DOUBLE_EQ(y[0], 1000.0);
  EXPECT_NEAR(y[1], 1000.0 + std::log(2.0), 1e-12);
  EXPECT_NEAR(y[2], y[1], 1e-12);
  const std::vector<double> all_neg_inf = logcumsumexp(full({3}, -INFINITY, kFloat64), 0).to_vector<double>();
  for (double v : all_neg_inf) EXPECT_EQ(v, -INFINITY);
  const std::vector<double> pos_inf = logcumsumexp(from_vector<double>({INFINITY, 1.0}), 0).to_vector<double>();
  EXPECT_EQ(pos_inf[0], INFINITY);
  EXPECT_EQ(pos_inf[1], INFINITY);
}

TEST(Scan, EmptyAndZeroDimInputs) {
  EXPECT_EQ(cumsum(zeros({0, 3}), 1).shape(), (Shape{0, 3}));
  EXPECT_EQ(cumsum(zeros({2, 0}), 1).shape(), (Shape{2, 0}));
  EXPECT_DOUBLE_EQ(cumprod(scalar_tensor(2.5, kFloat64), 0).item<double>(), 2.5);
  EXPECT_DOUBLE_EQ(cumsum(scalar_tensor(2.5, kFloat64), -1).item<double>(), 2.5);
}

TEST(Scan, GradientsMatchFiniteDifferences) {
  manual_seed(11);
  const Tensor x = randn({3, 5}, kFloat64);
  for (int64_t dim : {0, 1}) {
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return cumsum(in[0], dim); }, {x})) << dim;
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return cumprod(in[0], dim); }, {x})) << dim;
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return logcumsumexp(in[0], dim); }, {x})) << dim;
  }
}

TEST(Scan, CumprodGradientThroughZerosAsPyTorch) {
  // One zero, two zeros, a zero first and last: the finite differences hold
  // there too (cumprod is a polynomial), so gradcheck is the reference.
  const Tensor x = from_vector<double>({0.5, 0.0, 2.0, -1.5, 0.0, 3.0, 0.0, 1.2, 0.7, -0.4, 1.1, 0.0}, {3, 4});
  for (int64_t dim : {0, 1})
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return cumprod(in[0], dim); }, {x})) << dim;
  // The gradient of its gradient (create_graph), away from zeros (at a zero
  // the first-order formula's masks are constant, as PyTorch's).
  manual_seed(5);
  const Tensor away = randn({3, 4}, kFloat64);
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        EnableGradGuard on;
        const Tensor xi = in[0].requires_grad() ? in[0] : in[0].detach().requires_grad_(true);
        const Tensor y = cumprod(xi, 1);
        return autograd::grad({y}, {xi}, {ones_like(y)}, {.create_graph = true})[0];
      },
      {away}));
}

TEST(Scan, RefusesBadInput) {
  EXPECT_ANVIL_ERROR(cumsum(zeros({2, 3}), 2), "cumsum");
  EXPECT_ANVIL_ERROR(logcumsumexp(zeros({2}, kInt64), 0), "logcumsumexp: expected a floating input");
  EXPECT_ANVIL_ERROR(cumsum(zeros({2}), 0, kBool), "cumsum: cannot accumulate in bool");
}

}  // namespace
}  // namespace anvil
