// linalg::solve / inv / det / slogdet on the CPU (LAPACK): values against
// what they must satisfy (A X = B, A inv(A) = I) and against a naive
// elimination, PyTorch's vector-B and broadcasting rules, gradients against
// finite differences in float64, and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_all;
using testing::f64;
using testing::gradcheck;
using testing::gradgradcheck;

// Random matrices kept well away from singular: randn + n * I.
Tensor well_conditioned(const Shape& shape, DType dtype = kFloat64) {
  const int64_t n = shape.back();
  return randn(shape, TensorOptions().dtype(dtype)) + eye(n, TensorOptions().dtype(dtype)) * double(n);
}

// Determinant by Gaussian elimination with partial pivoting on the host,
// independent of LAPACK.
double naive_det(std::vector<double> m, int64_t n) {
  double det = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
      if (std::fabs(m[i * n + k]) > std::fabs(m[p * n + k])) p = i;
    if (m[p * n + k] == 0) return 0;
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(m[k * n + j], m[p * n + j]);
      det = -det;
    }
    det *= m[k * n + k];
    for (int64_t i = k + 1; i < n; ++i) {
      const double f = m[i * n + k] / m[k * n + k];
      for (int64_t j = k; j < n; ++j) m[i * n + j] -= f * m[k * n + j];
    }
  }
  return det;
}

TEST(LinalgSolve, SolvesBatchedSystemsInBothDtypes) {
  manual_seed(7);
  for (DType dtype : {kFloat32, kFloat64}) {
    Tensor A = well_conditioned({3, 5, 5}, dtype);
    Tensor B = randn({3, 5, 2}, TensorOptions().dtype(dtype));
    Tensor X = linalg::solve(A, B);
    EXPECT_EQ(X.shape(), (Shape{3, 5, 2}));
    EXPECT_EQ(X.dtype(), dtype);
    const double tol = dtype == kFloat32 ? 1e-4 : 1e-11;
    expect_near_all(matmul(A, X).to_vector<double>(), B.to_vector<double>(), tol);
  }
}

TEST(LinalgSolve, VectorRightHandSidesFollowPyTorchsRule) {
  manual_seed(8);
  Tensor A = well_conditioned({4, 4});
  Tensor b = randn({4}, f64());
  Tensor x = linalg::solve(A, b);  // 1-D B: a vector
  EXPECT_EQ(x.shape(), (Shape{4}));
  expect_near_all(matmul(A, x).to_vector<double>(), b.to_vector<double>(), 1e-12);

  Tensor As = well_conditioned({2, 3, 3});
  Tensor bs = randn({2, 3}, f64());  // A.shape[:-1]: a batch of vectors
  Tensor xs = linalg::solve(As, bs);
  EXPECT_EQ(xs.shape(), (Shape{2, 3}));
  expect_near_all(matmul(As, xs.unsqueeze(-1)).squeeze(-1).to_vector<double>(), bs.to_vector<double>(), 1e-12);

  Tensor Bm = randn({3, 3}, f64());  // [3, 3] is not A.shape[:-1] = [2, 3]: a matrix, broadcast
  EXPECT_EQ(linalg::solve(As, Bm).shape(), (Shape{2, 3, 3}));
}

TEST(LinalgSolve, BroadcastsBatchDims) {
  manual_seed(9);
  Tensor A = well_conditioned({2, 1, 3, 3});
  Tensor B = randn({4, 3, 2}, f64());
  Tensor X = linalg::solve(A, B);
  EXPECT_EQ(X.shape(), (Shape{2, 4, 3, 2}));
  expect_near_all(matmul(A, X).to_vector<double>(), B.expand({2, 4, 3, 2}).contiguous().to_vector<double>(), 1e-12);
}

TEST(LinalgSolve, LeftFalseSolvesXATimesEqualsB) {
  manual_seed(10);
  Tensor A = well_conditioned({3, 3});
  Tensor B = randn({2, 3}, f64());
  Tensor X = linalg::solve(A, B, /*left=*/false);
  EXPECT_EQ(X.shape(), (Shape{2, 3}));
  expect_near_all(matmul(X, A).to_vector<double>(), B.to_vector<double>(), 1e-12);
}

TEST(LinalgSolve, EmptyShapes) {
  EXPECT_EQ(linalg::solve(randn({0, 3, 3}, f64()), randn({0, 3, 2}, f64())).shape(), (Shape{0, 3, 2}));
  EXPECT_EQ(linalg::solve(randn({0, 0}, f64()), randn({0, 2}, f64())).shape(), (Shape{0, 2}));
  EXPECT_EQ(linalg::solve(well_conditioned({3, 3}), randn({3, 0}, f64())).shape(), (Shape{3, 0}));
  EXPECT_EQ(linalg::inv(randn({2, 0, 0}, f64())).shape(), (Shape{2, 0, 0}));
}

TEST(LinalgSolve, KnownSmallSystem) {
  // [[1, 2], [3, 4]] x = [1, 0] has x = [-2, 1.5]; its transpose would give [-2, 1].
  Tensor A = from_vector<double>({1, 2, 3, 4}, {2, 2});
  expect_near_all(linalg::solve(A, tensor({1.0, 0.0}, f64())).to_vector<double>(), {-2.0, 1.5}, 1e-15);
  expect_near_all(linalg::inv(A).to_vector<double>(), {-2.0, 1.0, 1.5, -0.5}, 1e-15);
}

TEST(LinalgSolve, LeavesItsInputsUntouched) {
  // A vector B and a transposed A are already dense in LAPACK's layout: the
  // factorization and the solve must still work on copies.
  manual_seed(16);
  Tensor A = well_conditioned({4, 4}).t(), b = randn({4}, f64());
  const std::vector<double> a_before = A.contiguous().to_vector<double>(), b_before = b.to_vector<double>();
  Tensor x = linalg::solve(A, b);
  EXPECT_EQ(A.contiguous().to_vector<double>(), a_before);
  EXPECT_EQ(b.to_vector<double>(), b_before);
  expect_near_all(matmul(A, x).to_vector<double>(), b_before, 1e-12);
  linalg::det(A);
  EXPECT_EQ(A.contiguous().to_vector<double>(), a_before);
}

TEST(LinalgSolve, ExchangesRowsWhenTheLeadingEntryIsZero) {
  // A zero leading entry: only row exchanges make this solvable.
  Tensor A = from_vector<double>({0, 1, 1, 0}, {2, 2});
  Tensor x = linalg::solve(A, tensor({2.0, 3.0}, f64()));
  expect_near_all(x.to_vector<double>(), {3.0, 2.0}, 1e-15);
}

TEST(LinalgInv, TimesAIsTheIdentity) {
  manual_seed(11);
  for (DType dtype : {kFloat32, kFloat64}) {
    Tensor A = well_conditioned({2, 4, 4}, dtype);
    Tensor Ai = linalg::inv(A);
    EXPECT_EQ(Ai.shape(), (Shape{2, 4, 4}));
    const double tol = dtype == kFloat32 ? 1e-5 : 1e-13;
    Tensor I = eye(4, TensorOptions().dtype(dtype)).expand({2, 4, 4}).contiguous();
    expect_near_all(matmul(A, Ai).to_vector<double>(), I.to_vector<double>(), tol);
    expect_near_all(matmul(Ai, A).to_vector<double>(), I.to_vector<double>(), tol);
  }
}

TEST(LinalgDet, MatchesNaiveElimination) {
  manual_seed(12);
  Tensor A = randn({3, 4, 4}, f64());
  Tensor d = linalg::det(A);
  EXPECT_EQ(d.shape(), (Shape{3}));
  auto [sign, logabs] = linalg::slogdet(A);
  for (int64_t i = 0; i < 3; ++i) {
    const double want = naive_det(A[i].contiguous().to_vector<double>(), 4);
    EXPECT_NEAR(d[i].item<double>(), want, 1e-12 * std::max(1.0, std::fabs(want)));
    EXPECT_EQ(sign[i].item<double>(), want > 0 ? 1.0 : -1.0);
    EXPECT_NEAR(logabs[i].item<double>(), std::log(std::fabs(want)), 1e-12);
  }
  // A row swap flips the sign; a singular matrix has det 0 and no error.
  EXPECT_DOUBLE_EQ(linalg::det(from_vector<double>({0, 1, 1, 0}, {2, 2})).item<double>(), -1.0);
  EXPECT_DOUBLE_EQ(linalg::det(from_vector<double>({1, 2, 2, 4}, {2, 2})).item<double>(), 0.0);
  auto [s0, l0] = linalg::slogdet(from_vector<double>({1, 2, 2, 4}, {2, 2}));
  EXPECT_EQ(s0.item<double>(), 0.0);
  EXPECT_TRUE(std::isinf(l0.item<double>()) && l0.item<double>() < 0);
  EXPECT_DOUBLE_EQ(linalg::det(randn({0, 0}, f64())).item<double>(), 1.0);
}

// --- gradients (float64, finite differences) ---

TEST(LinalgSolveGrad, MatrixVectorAndBroadcastRightHandSides) {
  manual_seed(13);
  auto fn = [](const std::vector<Tensor>& in) { return linalg::solve(in[0], in[1]); };
  EXPECT_TRUE(gradcheck(fn, {well_conditioned({3, 3}), randn({3, 2}, f64())}));
  EXPECT_TRUE(gradcheck(fn, {well_conditioned({3, 3}), randn({3}, f64())}));
  EXPECT_TRUE(gradcheck(fn, {well_conditioned({2, 3, 3}), randn({2, 3}, f64())}));
  EXPECT_TRUE(gradcheck(fn, {well_conditioned({2, 1, 3, 3}), randn({2, 3, 2}, f64())}));
  auto right = [](const std::vector<Tensor>& in) { return linalg::solve(in[0], in[1], false); };
  EXPECT_TRUE(gradcheck(right, {well_conditioned({3, 3}), randn({4, 3}, f64())}));
  EXPECT_TRUE(gradgradcheck(fn, {well_conditioned({3, 3}), randn({3, 2}, f64())}));
}

TEST(LinalgInvGrad, MatchesFiniteDifferences) {
  manual_seed(14);
  auto fn = [](const std::vector<Tensor>& in) { return linalg::inv(in[0]); };
  EXPECT_TRUE(gradcheck(fn, {well_conditioned({2, 3, 3})}));
  EXPECT_TRUE(gradgradcheck(fn, {well_conditioned({3, 3})}));
}

TEST(LinalgDetGrad, DetAndLogAbsDet) {
  manual_seed(15);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return linalg::det(in[0]); }, {randn({2, 3, 3}, f64())}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return linalg::slogdet(in[0]).second; },
                        {randn({2, 3, 3}, f64())}));
}

// --- bad input ---

TEST(LinalgSolveErrors, SingularMatrixNamesTheBatchElement) {
  Tensor A = well_conditioned({3, 2, 2});
  A.select(0, 1).zero_();
  EXPECT_ANVIL_ERROR(linalg::solve(A, randn({3, 2, 1}, f64())), "linalg.solve: (Batch element 1): The solver failed");
  EXPECT_ANVIL_ERROR(linalg::solve(from_vector<double>({1, 2, 2, 4}, {2, 2}), randn({2}, f64())),
                     "linalg.solve: The solver failed because the input matrix is singular");
  EXPECT_ANVIL_ERROR(linalg::inv(zeros({2, 2}, f64())), "linalg.inv: The solver failed");
}

TEST(LinalgSolveErrors, ShapesDtypesDevices) {
  EXPECT_ANVIL_ERROR(linalg::solve(randn({2, 3}, f64()), randn({2}, f64())), "square matrices");
  EXPECT_ANVIL_ERROR(linalg::solve(randn({3}, f64()), randn({3}, f64())), "at least 2 dimensions");
  EXPECT_ANVIL_ERROR(linalg::solve(well_conditioned({3, 3}), randn({4, 2}, f64())), "incompatible shapes");
  EXPECT_ANVIL_ERROR(linalg::solve(well_conditioned({2, 3, 3}), randn({4, 3, 1}, f64())), "broadcast");
  EXPECT_ANVIL_ERROR(linalg::solve(well_conditioned({3, 3}), randn({3, 1})), "same dtype");
  EXPECT_ANVIL_ERROR(linalg::solve(ones({3, 3}, kInt64), ones({3, 1}, kInt64)), "float32 or float64");
  EXPECT_ANVIL_ERROR(linalg::solve(randn({3, 3}), testing::fake_cuda_tensor({3, 1})), "same device");
  EXPECT_ANVIL_ERROR(linalg::inv(randn({2, 3})), "linalg.inv");
  EXPECT_ANVIL_ERROR(linalg::det(randn({2, 3})), "linalg.det");
  EXPECT_ANVIL_ERROR(linalg::inv(Tensor()), "linalg.inv");
}

}  // namespace
}  // namespace anvil
