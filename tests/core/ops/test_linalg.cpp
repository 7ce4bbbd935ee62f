// matmul / mm / bmm / dot: values against a naive triple loop over host data
// (with PyTorch's broadcasting and 1-D promotion rules), gradients, errors.
#include <gtest/gtest.h>

#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_all;
using testing::f64;
using testing::gradcheck;
using testing::gradgradcheck;

// Reference matmul written independently of the op: batch dims broadcast,
// a 1-D left operand is a row, a 1-D right operand is a column.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b, Shape* out_shape) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t nb = std::max(ab.size(), bb.size());
  while (ab.size() < nb) ab.insert(ab.begin(), 1);
  while (bb.size() < nb) bb.insert(bb.begin(), 1);
  Shape batch(nb);
  for (size_t i = 0; i < nb; ++i) batch[i] = std::max(ab[i], bb[i]);
  int64_t batches = 1;
  for (int64_t s : batch) batches *= s;
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<double> out(static_cast<size_t>(batches * m * n), 0.0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    auto idx = testing::unravel(bi, batch);
    std::vector<int64_t> ia(nb), ib(nb);
    for (size_t d = 0; d < nb; ++d) {
      ia[d] = ab[d] == 1 ? 0 : idx[d];
      ib[d] = bb[d] == 1 ? 0 : idx[d];
    }
    int64_t oa = testing::ravel(ia, ab) * m * k, ob = testing::ravel(ib, bb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += va[oa + i * k + p] * vb[ob + p * n + j];
        out[bi * m * n + i * n + j] = s;
      }
  }
  *out_shape = batch;
  if (a.dim() > 1) out_shape->push_back(m);
  if (b.dim() > 1) out_shape->push_back(n);
  return out;
}

void expect_matches_naive(const Tensor& a, const Tensor& b, double tol = 1e-12) {
  SCOPED_TRACE(::testing::Message() << a.shape_str() << " @ " << b.shape_str());
  Shape want_shape;
  auto want = naive_matmul(a, b, &want_shape);
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.shape(), want_shape);
  EXPECT_EQ(c.dtype(), a.dtype());
  expect_near_all(c.to_vector<double>(), want, tol);
}

TEST(Matmul, AllRankCombinationsMatchNaive) {
  expect_matches_naive(randn({5}, f64()), randn({5}, f64()));  // dot -> 0-d
  expect_matches_naive(randn({3, 5}, f64()), randn({5, 4}, f64()));  // mm
  expect_matches_naive(randn({5}, f64()), randn({5, 4}, f64()));  // vec @ mat
  expect_matches_naive(randn({3, 5}, f64()), randn({5}, f64()));  // mat @ vec
  expect_matches_naive(randn({2, 3, 5}, f64()), randn({2, 5, 4}, f64()));  // bmm
  expect_matches_naive(randn({2, 3, 5}, f64()), randn({5, 4}, f64()));  // shared weight
  expect_matches_naive(randn({3, 5}, f64()), randn({2, 5, 4}, f64()));
  expect_matches_naive(randn({5}, f64()), randn({2, 5, 4}, f64()));
  expect_matches_naive(randn({2, 3, 5}, f64()), randn({5}, f64()));
  expect_matches_naive(randn({2, 1, 3, 5}, f64()), randn({4, 5, 2}, f64()));  // broadcast batch
  expect_matches_naive(randn({1, 3, 3, 5}, f64()), randn({2, 1, 5, 2}, f64()));  // mixed: needs a copy
}

TEST(Matmul, Float32AndEmptyDims) {
  expect_matches_naive(randn({4, 7}), randn({7, 3}), 1e-4);
  Tensor c = matmul(randn({3, 0}, f64()), randn({0, 4}, f64()));
  EXPECT_EQ(c.shape(), (Shape{3, 4}));
  expect_near_all(c.to_vector<double>(), std::vector<double>(12, 0.0), 0);
  EXPECT_EQ(matmul(randn({0, 3}), randn({3, 4})).shape(), (Shape{0, 4}));
  EXPECT_EQ(matmul(randn({2, 0, 3}), randn({3, 4})).shape(), (Shape{2, 0, 4}));
}

TEST(Matmul, HalfPrecision) {
  for (DType t : {kFloat16, kBFloat16}) {
    Tensor a = randn({2, 3, 8}).to(t), b = randn({8, 4}).to(t);
    Tensor c = matmul(a, b);
    EXPECT_EQ(c.dtype(), t);
    Shape shape;
    auto want = naive_matmul(a, b, &shape);  // from the rounded inputs
    expect_near_all(c.to_vector<double>(), want, 0.1);
  }
}

TEST(Matmul, NonContiguousOperands) {
  Tensor a = randn({5, 3}, f64()).t();  // [3, 5] transposed
  Tensor b = randn({4, 10}, f64()).slice(1, 0, 10, 2);  // [4, 5] strided
  expect_matches_naive(a, b.t());
  Tensor ba = randn({3, 2, 5}, f64()).permute({1, 0, 2});  // batch stride not outermost
  Tensor bb = randn({2, 4, 5}, f64()).transpose(1, 2);
  expect_matches_naive(ba, bb);
  Tensor sel = randn({2, 6, 5}, f64()).slice(1, 0, 6, 2);  // [2, 3, 5] with row stride 10
  expect_matches_naive(sel, randn({2, 5, 2}, f64()));
}

TEST(Matmul, MmBmmDotCheckTheirRanks) {
  Tensor a = randn({3, 4}, f64()), b = randn({4, 2}, f64());
  expect_near_all(mm(a, b).to_vector<double>(), matmul(a, b).to_vector<double>(), 0);
  Tensor x = randn({2, 3, 4}, f64()), y = randn({2, 4, 5}, f64());
  expect_near_all(bmm(x, y).to_vector<double>(), matmul(x, y).to_vector<double>(), 0);
  Tensor u = randn({6}, f64()), v = randn({6}, f64());
  auto vu = u.to_vector<double>(), vv = v.to_vector<double>();
  double want = 0;
  for (int i = 0; i < 6; ++i) want += vu[i] * vv[i];
  EXPECT_NEAR(dot(u, v).item<double>(), want, 1e-12);
  EXPECT_EQ(dot(u, v).dim(), 0);

  EXPECT_ANVIL_ERROR(mm(x, y), "mm");
  EXPECT_ANVIL_ERROR(mm(a, u), "mm");
  EXPECT_ANVIL_ERROR(bmm(a, b), "bmm");
  EXPECT_ANVIL_ERROR(bmm(x, randn({3, 4, 5}, f64())), "bmm: batch sizes differ");
  EXPECT_ANVIL_ERROR(dot(a, b), "dot");
  EXPECT_ANVIL_ERROR(dot(u, randn({5}, f64())), "dot");
}

TEST(Matmul, BadInputs) {
  EXPECT_ANVIL_ERROR(matmul(randn({3, 4}), randn({5, 2})), "cannot be multiplied");
  EXPECT_ANVIL_ERROR(matmul(randn({3, 4}), randn({5, 2})), "[3, 4]");
  EXPECT_ANVIL_ERROR(matmul(randn({3}), randn({4})), "matmul");
  EXPECT_ANVIL_ERROR(matmul(randn({3, 4}), randn({4, 2}, f64())), "float32");
  EXPECT_ANVIL_ERROR(matmul(randn({3, 4}), randn({4, 2}, f64())), "float64");
  EXPECT_ANVIL_ERROR(matmul(ones({2, 2}, kInt64), ones({2, 2}, kInt64)), "floating");
  EXPECT_ANVIL_ERROR(matmul(scalar_tensor(1.0), randn({2})), "at least 1 dim");
  EXPECT_ANVIL_ERROR(matmul(randn({2, 3, 4}), randn({3, 4, 5})), "broadcast");
  EXPECT_ANVIL_ERROR(matmul(randn({2, 3}), testing::fake_cuda_tensor({3, 2})), "same device");
  EXPECT_ANVIL_ERROR(matmul(randn({2, 3}), Tensor()), "matmul");
}

// --- gradients ---

TEST(MatmulGrad, EveryRankCombination) {
  auto fn = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
  std::vector<std::pair<Shape, Shape>> cases = {
      {{4}, {4}},
      {{3, 4}, {4, 2}},
      {{4}, {4, 2}},
      {{3, 4}, {4}},
      {{2, 3, 4}, {2, 4, 5}},
      {{2, 3, 4}, {4, 5}},
      {{3, 4}, {2, 4, 5}},
      {{4}, {2, 4, 3}},
      {{2, 3, 4}, {4}},
      {{2, 1, 3, 4}, {3, 4, 2}},
      {{1, 3, 2, 4}, {2, 1, 4, 2}},
  };
  for (auto& [sa, sb] : cases) {
    SCOPED_TRACE(::testing::Message() << ::testing::PrintToString(sa) << " @ " << ::testing::PrintToString(sb));
    EXPECT_TRUE(gradcheck(fn, {randn(sa, f64()), randn(sb, f64())}));
  }
}

TEST(MatmulGrad, NonContiguousAndOneSided) {
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return matmul(in[0].t(), in[1].slice(1, 0, 6, 2)); },
                        {randn({4, 3}, f64()), randn({4, 6}, f64())}));
  // Only one operand requires grad.
  Tensor w = randn({4, 2}, f64());
  EXPECT_TRUE(gradcheck([w](const std::vector<Tensor>& in) { return mm(in[0], w); }, {randn({3, 4}, f64())}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return bmm(in[0], in[1]); },
                        {randn({2, 3, 4}, f64()), randn({2, 4, 2}, f64())}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return dot(in[0], in[1]); },
                        {randn({5}, f64()), randn({5}, f64())}));
}

TEST(MatmulGrad, SecondOrder) {
  EXPECT_TRUE(gradgradcheck([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
                            {randn({2, 3, 4}, f64()), randn({4, 2}, f64())}));
  EXPECT_TRUE(
      gradgradcheck([](const std::vector<Tensor>& in) { return matmul(in[0], in[0].t()); }, {randn({3, 4}, f64())}));
}

}  // namespace
}  // namespace anvil
