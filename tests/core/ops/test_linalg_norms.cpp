// linalg::vector_norm / matrix_norm / norm: values against host loops,
// PyTorch's choice between vector and matrix norms, gradients in float64,
// and bad input (the singular-value ords 2, -2 and "nuc" are in test_linalg_svd.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_all;
using testing::f64;
using testing::gradcheck;

constexpr double kInf = std::numeric_limits<double>::infinity();

double host_vector_norm(const std::vector<double>& v, double ord) {
  if (std::isinf(ord)) {
    double r = ord > 0 ? 0 : kInf;
    for (double x : v) r = ord > 0 ? std::max(r, std::fabs(x)) : std::min(r, std::fabs(x));
    return r;
  }
  if (ord == 0) return static_cast<double>(std::count_if(v.begin(), v.end(), [](double x) { return x != 0; }));
  double s = 0;
  for (double x : v) s += std::pow(std::fabs(x), ord);
  return std::pow(s, 1.0 / ord);
}

TEST(LinalgVectorNorm, EveryOrderOverAllAndOneDim) {
  manual_seed(21);
  Tensor x = randn({3, 4}, f64());
  x.select(0, 0).select(0, 1).fill_(0.0);  // a zero, so ord 0 counts something
  const std::vector<double> all = x.to_vector<double>();
  for (double ord : {2.0, 1.0, kInf, -kInf, 0.0, 3.5, 0.5, -1.5}) {
    SCOPED_TRACE(::testing::Message() << "ord " << ord);
    EXPECT_NEAR(linalg::vector_norm(x, ord).item<double>(), host_vector_norm(all, ord), 1e-12);
    Tensor rows = linalg::vector_norm(x, ord, {-1});
    EXPECT_EQ(rows.shape(), (Shape{3}));
    for (int64_t i = 0; i < 3; ++i)
      EXPECT_NEAR(rows[i].item<double>(), host_vector_norm(x[i].contiguous().to_vector<double>(), ord), 1e-12);
  }
  EXPECT_EQ(linalg::vector_norm(x, 2, {1}, true).shape(), (Shape{3, 1}));
  EXPECT_EQ(linalg::vector_norm(x, 2, {}, true).shape(), (Shape{1, 1}));
  EXPECT_EQ(linalg::vector_norm(randn({2, 3}), 2).dtype(), kFloat32);
}

TEST(LinalgMatrixNorm, OrdersAgainstRowAndColumnSums) {
  manual_seed(22);
  Tensor x = randn({2, 3, 4}, f64());
  for (int64_t b = 0; b < 2; ++b) {
    const std::vector<double> m = x[b].contiguous().to_vector<double>();
    std::vector<double> col(4, 0), row(3, 0);
    double fro = 0;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        col[j] += std::fabs(m[i * 4 + j]);
        row[i] += std::fabs(m[i * 4 + j]);
        fro += m[i * 4 + j] * m[i * 4 + j];
      }
    EXPECT_NEAR(linalg::matrix_norm(x, 1)[b].item<double>(), *std::max_element(col.begin(), col.end()), 1e-12);
    EXPECT_NEAR(linalg::matrix_norm(x, -1)[b].item<double>(), *std::min_element(col.begin(), col.end()), 1e-12);
    EXPECT_NEAR(linalg::matrix_norm(x, kInf)[b].item<double>(), *std::max_element(row.begin(), row.end()), 1e-12);
    EXPECT_NEAR(linalg::matrix_norm(x, -kInf)[b].item<double>(), *std::min_element(row.begin(), row.end()), 1e-12);
    EXPECT_NEAR(linalg::matrix_norm(x)[b].item<double>(), std::sqrt(fro), 1e-12);
  }
  EXPECT_EQ(linalg::matrix_norm(x, 1, {-2, -1}, true).shape(), (Shape{2, 1, 1}));
  // Other dims: the matrices of x over dims (0, 2) are [2, 4], one per dim-1 index.
  Tensor over02 = linalg::matrix_norm(x, kInf, {0, 2});
  EXPECT_EQ(over02.shape(), (Shape{3}));
  expect_near_all(over02.to_vector<double>(), linalg::matrix_norm(x.permute({1, 0, 2}), kInf).to_vector<double>(),
                  1e-12);
}

TEST(LinalgNorm, PicksVectorOrMatrixNormsAsPyTorch) {
  manual_seed(23);
  Tensor m = randn({3, 4}, f64()), v = randn({5}, f64()), t = randn({2, 3, 4}, f64());
  // No ord: the 2-norm of everything, whatever the rank.
  EXPECT_NEAR(linalg::norm(t).item<double>(), host_vector_norm(t.to_vector<double>(), 2), 1e-12);
  // An ord and no dim: 1-D is a vector norm, 2-D a matrix norm.
  EXPECT_NEAR(linalg::norm(v, 1).item<double>(), host_vector_norm(v.to_vector<double>(), 1), 1e-12);
  EXPECT_NEAR(linalg::norm(m, 1).item<double>(), linalg::matrix_norm(m, 1).item<double>(), 0);
  EXPECT_NEAR(linalg::norm(m, "fro").item<double>(), host_vector_norm(m.to_vector<double>(), 2), 1e-12);
  // One dim: vector norms; two dims: matrix norms.
  expect_near_all(linalg::norm(t, 3, {1}).to_vector<double>(), linalg::vector_norm(t, 3, {1}).to_vector<double>(), 0);
  expect_near_all(linalg::norm(t, kInf, {1, 2}).to_vector<double>(), linalg::matrix_norm(t, kInf).to_vector<double>(),
                  0);
  expect_near_all(linalg::norm(t, std::nullopt, {1, 2}).to_vector<double>(),
                  linalg::matrix_norm(t, "fro").to_vector<double>(), 0);
}

TEST(LinalgNormGrad, MatchesFiniteDifferences) {
  manual_seed(24);
  Tensor x = randn({3, 4}, f64());
  for (double ord : {2.0, 1.0, kInf, -kInf, 3.0}) {
    SCOPED_TRACE(::testing::Message() << "vector ord " << ord);
    EXPECT_TRUE(gradcheck([ord](const std::vector<Tensor>& in) { return linalg::vector_norm(in[0], ord, {1}); }, {x}));
  }
  for (double ord : {1.0, -1.0, kInf, -kInf}) {
    SCOPED_TRACE(::testing::Message() << "matrix ord " << ord);
    EXPECT_TRUE(gradcheck([ord](const std::vector<Tensor>& in) { return linalg::matrix_norm(in[0], ord); },
                          {randn({2, 3, 4}, f64())}));
  }
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return linalg::norm(in[0], "fro"); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return linalg::norm(in[0]); }, {x}));
}

TEST(LinalgNormErrors, BadOrdersDimsAndInputs) {
  Tensor m = randn({3, 4});
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(m, 3), "order 3 is not supported");
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(m, "max"), "order \"max\"");
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(randn({3}), 1), "at least 2 dimensions");
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(m, 1, {0, 0}), "dims must be different");
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(m, 1, {0, 2}), "linalg.matrix_norm");
  EXPECT_ANVIL_ERROR(linalg::norm(randn({2, 3, 4}), 2), "must be 1-D or 2-D");
  EXPECT_ANVIL_ERROR(linalg::norm(randn({2, 3, 4}), "fro"), "needs a 2-D input");
  EXPECT_ANVIL_ERROR(linalg::norm(m, 2, {0, 1, 1}), "dim must have 1 or 2 dims");
  EXPECT_ANVIL_ERROR(linalg::vector_norm(ones({3}, kInt64)), "linalg.vector_norm: expected a floating input");
  EXPECT_ANVIL_ERROR(linalg::vector_norm(m, 2, {2}),
                     "linalg.vector_norm: dim 2 is out of range for a tensor with 2 dims");
  EXPECT_ANVIL_ERROR(linalg::vector_norm(m, 2, {-3}, false, kFloat64), "linalg.vector_norm: dim -3");
}

}  // namespace
}  // namespace anvil
