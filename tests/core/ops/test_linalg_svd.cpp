// linalg::svd / svdvals and the singular-value matrix norms (ord 2, -2,
// "nuc"): values against references computed another way in float64 (a
// Jacobi eigenvalue solver and power iteration on the Gram matrix, diagonal
// and orthogonal constructions), the factorization's invariants, gradients
// against finite differences, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <tuple>

#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_all;
using testing::f64;
using testing::gradcheck;

// "[2, 3, 4]", for the traces (Shape has no operator<<).
std::string shape_text(const Shape& shape) {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i) r += (i ? ", " : "") + std::to_string(shape[i]);
  return r + "]";
}

using HostMatrix = std::vector<std::vector<double>>;

// The Gram matrix of the smaller side of a row-major rows x cols matrix:
// its eigenvalues are the squared singular values.
HostMatrix small_gram(const std::vector<double>& a, int64_t rows, int64_t cols) {
  const bool tall = rows >= cols;
  const int64_t k = std::min(rows, cols), other = std::max(rows, cols);
  auto at = [&](int64_t i, int64_t l) { return tall ? a[l * cols + i] : a[i * cols + l]; };  // i < k, l < other
  HostMatrix g(k, std::vector<double>(k, 0));
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j)
      for (int64_t l = 0; l < other; ++l) g[i][j] += at(i, l) * at(j, l);
  return g;
}

// Eigenvalues of a symmetric matrix by cyclic two-sided Jacobi, descending.
std::vector<double> symmetric_eigenvalues(HostMatrix g) {
  const size_t n = g.size();
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (size_t p = 0; p < n; ++p)
      for (size_t q = p + 1; q < n; ++q) off += g[p][q] * g[p][q];
    if (off < 1e-30) break;
    for (size_t p = 0; p < n; ++p)
      for (size_t q = p + 1; q < n; ++q) {
        if (g[p][q] == 0) continue;
        const double theta = (g[q][q] - g[p][p]) / (2 * g[p][q]);
        const double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (size_t k = 0; k < n; ++k) {  // G <- J^T G J
          const double gp = g[k][p], gq = g[k][q];
          g[k][p] = c * gp - s * gq;
          g[k][q] = s * gp + c * gq;
        }
        for (size_t k = 0; k < n; ++k) {
          const double gp = g[p][k], gq = g[q][k];
          g[p][k] = c * gp - s * gq;
          g[q][k] = s * gp + c * gq;
        }
      }
  }
  std::vector<double> ev(n);
  for (size_t i = 0; i < n; ++i) ev[i] = g[i][i];
  std::sort(ev.rbegin(), ev.rend());
  return ev;
}

// The largest eigenvalue of a symmetric positive semi-definite matrix by power iteration.
double power_iteration(const HostMatrix& g) {
  std::vector<double> x(g.size(), 1.0), y(g.size());
  double lambda = 0;
  for (int it = 0; it < 5000; ++it) {
    for (size_t i = 0; i < g.size(); ++i) {
      y[i] = 0;
      for (size_t j = 0; j < g.size(); ++j) y[i] += g[i][j] * x[j];
    }
    double norm = 0;
    for (double v : y) norm += v * v;
    norm = std::sqrt(norm);
    for (size_t i = 0; i < g.size(); ++i) x[i] = y[i] / norm;
    lambda = norm;
  }
  return lambda;
}

// Singular values of each matrix of a [B, rows, cols] float64 tensor, from the eigenvalues of its Gram matrix.
std::vector<std::vector<double>> reference_singular_values(const Tensor& x) {
  std::vector<std::vector<double>> out;
  for (int64_t b = 0; b < x.size(0); ++b) {
    std::vector<double> ev =
        symmetric_eigenvalues(small_gram(x[b].contiguous().to_vector<double>(), x.size(1), x.size(2)));
    for (double& v : ev) v = std::sqrt(std::max(v, 0.0));
    out.push_back(ev);
  }
  return out;
}

Tensor matrices_product(const Tensor& U, const Tensor& S, const Tensor& Vh) { return matmul(U * S.unsqueeze(-2), Vh); }

TEST(LinalgSvd, FactorsReconstructAndAreOrthonormal) {
  manual_seed(31);
  for (const Shape& shape : {Shape{5, 3}, Shape{2, 3, 6}, Shape{2, 2, 4, 4}, Shape{1, 7, 1}}) {
    for (DType dtype : {kFloat64, kFloat32}) {
      SCOPED_TRACE(::testing::Message() << "shape " << shape_text(shape) << " " << dtype_name(dtype));
      const double tol = dtype == kFloat64 ? 1e-12 : 2e-5;
      Tensor A = randn(shape, f64()).to(dtype);
      auto [U, S, Vh] = linalg::svd(A, /*full_matrices=*/false);
      const int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
      EXPECT_EQ(U.shape().back(), k);
      EXPECT_EQ(S.shape().back(), k);
      EXPECT_EQ(Vh.size(-2), k);
      EXPECT_EQ(Vh.size(-1), n);
      EXPECT_EQ(S.dtype(), dtype);
      expect_near_all(matrices_product(U, S, Vh).to(kFloat64).to_vector<double>(), A.to(kFloat64).to_vector<double>(),
                      10 * tol);
      auto expect_identity = [&](const Tensor& gram) {
        expect_near_all(gram.to(kFloat64).contiguous().to_vector<double>(),
                        eye(k, f64()).expand(gram.shape()).contiguous().to_vector<double>(), 10 * tol);
      };
      expect_identity(matmul(U.transpose(-1, -2), U));
      expect_identity(matmul(Vh, Vh.transpose(-1, -2)));
      // svdvals: the same values, descending and nonnegative.
      const std::vector<double> s = linalg::svdvals(A).to(kFloat64).to_vector<double>();
      expect_near_all(s, S.to(kFloat64).to_vector<double>(), tol);
      for (size_t i = 0; i < s.size(); ++i) {
        EXPECT_GE(s[i], 0);
        if (i % k != 0) {
          EXPECT_LE(s[i], s[i - 1]);
        }
      }
    }
  }
}

TEST(LinalgSvd, ValuesMatchGramEigenvalues) {
  manual_seed(32);
  for (const Shape& shape : {Shape{3, 4, 6}, Shape{2, 6, 4}, Shape{2, 5, 5}}) {
    SCOPED_TRACE(::testing::Message() << "shape " << shape_text(shape));
    Tensor A = randn(shape, f64());
    const auto ref = reference_singular_values(A);
    Tensor S = linalg::svdvals(A);
    for (int64_t b = 0; b < shape[0]; ++b) expect_near_all(S[b].to_vector<double>(), ref[b], 1e-10);
  }
  // A square full_matrices SVD is the reduced one (LAPACK's paths with and
  // without vectors may differ in the last bit).
  Tensor sq = randn({3, 3}, f64());
  expect_near_all(std::get<1>(linalg::svd(sq)).to_vector<double>(), linalg::svdvals(sq).to_vector<double>(), 1e-13);
}

TEST(LinalgMatrixNorm, SingularValueOrdsAgainstReferences) {
  manual_seed(33);
  Tensor x = randn({3, 4, 6}, f64());
  const auto ref = reference_singular_values(x);
  Tensor two = linalg::matrix_norm(x, 2), minus_two = linalg::matrix_norm(x, -2), nuc = linalg::matrix_norm(x, "nuc");
  for (int64_t b = 0; b < 3; ++b) {
    // ord 2 against power iteration on the Gram matrix, a reference that shares nothing with the SVD.
    const double lambda = power_iteration(small_gram(x[b].contiguous().to_vector<double>(), 4, 6));
    EXPECT_NEAR(two[b].item<double>(), std::sqrt(lambda), 1e-9);
    EXPECT_NEAR(minus_two[b].item<double>(), ref[b].back(), 1e-10);
    double total = 0;
    for (double v : ref[b]) total += v;
    EXPECT_NEAR(nuc[b].item<double>(), total, 1e-10);
  }
  // Float32 agrees with float64.
  expect_near_all(linalg::matrix_norm(x.to(kFloat32), "nuc").to(kFloat64).to_vector<double>(), nuc.to_vector<double>(),
                  1e-4);
  expect_near_all(linalg::matrix_norm(x.to(kFloat32), -2).to(kFloat64).to_vector<double>(),
                  minus_two.to_vector<double>(), 1e-4);
  // linalg.norm picks the matrix norm for 2-D input or a dim pair.
  EXPECT_NEAR(linalg::norm(x[0], 2).item<double>(), two[0].item<double>(), 0);
  EXPECT_NEAR(linalg::norm(x[1], "nuc").item<double>(), nuc[1].item<double>(), 0);
  expect_near_all(linalg::norm(x, -2, {1, 2}).to_vector<double>(), minus_two.to_vector<double>(), 0);
}

TEST(LinalgMatrixNorm, SingularValueOrdsOfDiagonalAndOrthogonalConstructions) {
  // diag(3, -1, 2): singular values 3, 2, 1.
  Tensor d = zeros({3, 3}, f64());
  d.select(0, 0).select(0, 0).fill_(3.0);
  d.select(0, 1).select(0, 1).fill_(-1.0);
  d.select(0, 2).select(0, 2).fill_(2.0);
  EXPECT_NEAR(linalg::matrix_norm(d, 2).item<double>(), 3.0, 1e-14);
  EXPECT_NEAR(linalg::matrix_norm(d, -2).item<double>(), 1.0, 1e-14);
  EXPECT_NEAR(linalg::matrix_norm(d, "nuc").item<double>(), 6.0, 1e-14);
  // Q diag(d) P with Q, P orthogonal (Householder reflections) keeps the singular values.
  auto householder = [](std::vector<double> v) {
    double vv = 0;
    for (double e : v) vv += e * e;
    Tensor q = eye(3, f64());
    Tensor vt = from_vector(v, {3, 1}).to(kFloat64);
    return q - matmul(vt, vt.transpose(0, 1)) * (2.0 / vv);
  };
  Tensor A = matmul(matmul(householder({1, 2, -1}), d), householder({0.5, -1, 3}));
  EXPECT_NEAR(linalg::matrix_norm(A, 2).item<double>(), 3.0, 1e-12);
  EXPECT_NEAR(linalg::matrix_norm(A, -2).item<double>(), 1.0, 1e-12);
  EXPECT_NEAR(linalg::matrix_norm(A, "nuc").item<double>(), 6.0, 1e-12);
  // An orthogonal matrix: every singular value 1.
  Tensor Q = householder({2, -1, 0.25});
  EXPECT_NEAR(linalg::matrix_norm(Q, "nuc").item<double>(), 3.0, 1e-12);
  EXPECT_NEAR(linalg::matrix_norm(Q, -2).item<double>(), 1.0, 1e-12);
  // A rank-one matrix u v^T: ord 2 is |u| |v|, nuc too, ord -2 is 0.
  Tensor r1 = matmul(from_vector(std::vector<double>{1, 2, 2}, {3, 1}).to(kFloat64),
                     from_vector(std::vector<double>{3, 4}, {1, 2}).to(kFloat64));
  EXPECT_NEAR(linalg::matrix_norm(r1, 2).item<double>(), 15.0, 1e-12);
  EXPECT_NEAR(linalg::matrix_norm(r1, "nuc").item<double>(), 15.0, 1e-12);
  EXPECT_NEAR(linalg::matrix_norm(r1, -2).item<double>(), 0.0, 1e-12);
}

TEST(LinalgMatrixNorm, SingularValueOrdsOverOtherDimsAndKeepdim) {
  manual_seed(34);
  Tensor x = randn({2, 3, 4}, f64());
  for (double ord : {2.0, -2.0}) {
    Tensor over02 = linalg::matrix_norm(x, ord, {0, 2});
    EXPECT_EQ(over02.shape(), (Shape{3}));
    expect_near_all(over02.to_vector<double>(), linalg::matrix_norm(x.permute({1, 0, 2}), ord).to_vector<double>(),
                    1e-12);
    // (2, 0): the transposed matrices, whose singular values are the same.
    expect_near_all(linalg::matrix_norm(x, ord, {2, 0}).to_vector<double>(), over02.to_vector<double>(), 1e-12);
    EXPECT_EQ(linalg::matrix_norm(x, ord, {0, 2}, true).shape(), (Shape{1, 3, 1}));
  }
  EXPECT_EQ(linalg::matrix_norm(x, "nuc", {-2, -1}, true).shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(linalg::matrix_norm(x, "nuc", {1, 0}).shape(), (Shape{4}));
  EXPECT_EQ(linalg::matrix_norm(x, 2, {-2, -1}, false, kFloat32).dtype(), kFloat32);
}

TEST(LinalgSvdGrad, NormsMatchFiniteDifferencesAndSingularVectors) {
  manual_seed(35);
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{4, 3}, Shape{3, 3}}) {
    SCOPED_TRACE(::testing::Message() << "shape " << shape_text(shape));
    Tensor x = randn(shape, f64());
    for (double ord : {2.0, -2.0}) {
      SCOPED_TRACE(::testing::Message() << "ord " << ord);
      EXPECT_TRUE(gradcheck([ord](const std::vector<Tensor>& in) { return linalg::matrix_norm(in[0], ord); }, {x}));
    }
    EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return linalg::matrix_norm(in[0], "nuc"); }, {x}));
    EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return linalg::svdvals(in[0]); }, {x}));
  }
  // The closed forms: ord 2 -> u1 v1^T, ord -2 -> u_k v_k^T, nuc -> U V^T.
  Tensor x = randn({4, 3}, f64());
  const auto factors = linalg::svd(x, false);
  const Tensor U = std::get<0>(factors), Vh = std::get<2>(factors);
  auto grad_of = [&](const std::function<Tensor(const Tensor&)>& f) {
    Tensor leaf = x.detach().clone().requires_grad_(true);
    f(leaf).backward();
    return leaf.grad().to_vector<double>();
  };
  auto outer = [&](int64_t i) { return matmul(U.select(-1, i).unsqueeze(-1), Vh.select(-2, i).unsqueeze(-2)); };
  expect_near_all(grad_of([](const Tensor& a) { return linalg::matrix_norm(a, 2); }), outer(0).to_vector<double>(),
                  1e-12);
  expect_near_all(grad_of([](const Tensor& a) { return linalg::matrix_norm(a, -2); }), outer(2).to_vector<double>(),
                  1e-12);
  expect_near_all(grad_of([](const Tensor& a) { return linalg::matrix_norm(a, "nuc"); }),
                  matmul(U, Vh).to_vector<double>(), 1e-12);
}

TEST(LinalgSvdGrad, FactorsMatchFiniteDifferences) {
  manual_seed(36);
  // Functions of U and Vh that do not depend on the singular vectors' signs.
  for (const Shape& shape : {Shape{5, 3}, Shape{3, 5}, Shape{2, 4, 4}}) {
    SCOPED_TRACE(::testing::Message() << "shape " << shape_text(shape));
    Tensor x = randn(shape, f64());
    EXPECT_TRUE(gradcheck(
        [](const std::vector<Tensor>& in) {
          auto [U, S, Vh] = linalg::svd(in[0], false);
          return matmul(U * (S * S).unsqueeze(-2), Vh);
        },
        {x}));
    EXPECT_TRUE(gradcheck(
        [](const std::vector<Tensor>& in) {
          auto [U, S, Vh] = linalg::svd(in[0], false);
          return matmul(U, Vh);
        },
        {x}));
    EXPECT_TRUE(gradcheck(
        [](const std::vector<Tensor>& in) {
          auto [U, S, Vh] = linalg::svd(in[0], false);
          return matmul(U, U.transpose(-1, -2)) + S.sum();
        },
        {x}));
  }
}

TEST(LinalgSvdErrors, BadOrdsInputsAndOptions) {
  Tensor m = randn({3, 4});
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(m, "fro2"),
                     "linalg.matrix_norm: order \"fro2\" is not supported; expected \"fro\", \"nuc\"");
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(m, 3),
                     "linalg.matrix_norm: order 3 is not supported; expected one of 1, -1, 2");
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(randn({4}), 2),
                     "linalg.matrix_norm: the input must have at least 2 dimensions");
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(ones({3, 3}, kInt64), "nuc"), "linalg.matrix_norm: expected a floating input");
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(m.to(kFloat16), 2), "need float32 or float64");
  EXPECT_ANVIL_ERROR(linalg::matrix_norm(randn({0, 3}), -2), "needs non-empty matrices");
  EXPECT_ANVIL_ERROR(linalg::svdvals(randn({4})), "linalg.svdvals: A must have at least 2 dimensions");
  EXPECT_ANVIL_ERROR(linalg::svdvals(ones({2, 2}, kInt32)), "linalg.svdvals: expected A of dtype float32 or float64");
  EXPECT_ANVIL_ERROR(linalg::svdvals(m, "qr"), "linalg.svdvals: driver \"qr\" is not one of");
  EXPECT_ANVIL_ERROR(linalg::svd(m), "linalg.svd: full_matrices=true for 3x4 matrices");
  EXPECT_ANVIL_ERROR(linalg::svd(ones({2, 2}, kBool), false), "linalg.svd: expected A of dtype float32 or float64");
  // The empty cases PyTorch allows: no values, and a nuclear norm of 0.
  EXPECT_EQ(linalg::svdvals(randn({2, 0, 3})).shape(), (Shape{2, 0}));
  EXPECT_EQ(linalg::matrix_norm(randn({0, 3}), "nuc").item<double>(), 0.0);
}

}  // namespace
}  // namespace anvil
