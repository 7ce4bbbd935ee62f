// cat / stack / split / chunk: values against index arithmetic on host data,
// gradients, PyTorch's edge cases, and bad input.
#include <gtest/gtest.h>

#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_all;
using testing::f64;
using testing::gradcheck;
using testing::max_abs_diff;

// Element at multi-index idx of a row-major value list of `shape`.
double at(const std::vector<double>& v, const Shape& shape, const std::vector<int64_t>& idx) {
  return v[testing::ravel(idx, shape)];
}

TEST(Cat, MatchesIndexArithmeticAlongEachDim) {
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    SCOPED_TRACE(dim);
    int64_t d = dim < 0 ? dim + 3 : dim;
    Shape s1{2, 3, 4}, s2{2, 3, 4};
    s1[d] = 1;
    s2[d] = 3;
    Tensor a = randn({2, 3, 4}, f64()), b = randn(s1, f64()), c = randn(s2, f64());
    Tensor out = cat({a, b, c}, dim);
    Shape want = {2, 3, 4};
    want[d] = a.shape()[d] + 1 + 3;
    ASSERT_EQ(out.shape(), want);
    auto vo = out.to_vector<double>(), va = a.to_vector<double>();
    auto vb = b.to_vector<double>(), vc = c.to_vector<double>();
    for (int64_t i = 0; i < out.numel(); ++i) {
      auto idx = testing::unravel(i, want);
      double expected;
      if (idx[d] < a.shape()[d]) {
        expected = at(va, a.shape(), idx);
      } else if (idx[d] < a.shape()[d] + 1) {
        idx[d] -= a.shape()[d];
        expected = at(vb, b.shape(), idx);
      } else {
        idx[d] -= a.shape()[d] + 1;
        expected = at(vc, c.shape(), idx);
      }
      ASSERT_EQ(vo[i], expected) << "element " << i;
    }
  }
}

TEST(Cat, NonContiguousInputsAndDtypePromotion) {
  Tensor a = randn({3, 2}, f64()).t();  // [2, 3]
  Tensor b = from_vector(std::vector<int32_t>{1, 2, 3}, {1, 3});
  Tensor out = cat({a, b}, 0);
  EXPECT_EQ(out.dtype(), kFloat64);
  auto want = a.contiguous().to_vector<double>();
  want.insert(want.end(), {1, 2, 3});
  expect_near_all(out.to_vector<double>(), want, 0);

  Tensor f = ones({2}, kFloat32), i = from_vector(std::vector<int64_t>{7, 8});
  Tensor mixed = cat({i, f});
  EXPECT_EQ(mixed.dtype(), kFloat32);
  expect_near_all(mixed.to_vector<double>(), {7, 8, 1, 1}, 0);
  EXPECT_EQ(cat({i, i}).dtype(), kInt64);
}

TEST(Cat, LegacyEmptyOneDimTensorsAreSkipped) {
  Tensor a = randn({2, 3}, f64()), e = empty({0}, f64());
  Tensor out = cat({e, a, e}, 1);
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  expect_near_all(out.to_vector<double>(), a.to_vector<double>(), 0);
  EXPECT_EQ(cat({e, e}).shape(), (Shape{0}));
  // Empty tensors of the right rank take part normally.
  EXPECT_EQ(cat({a, empty({2, 0}, f64())}, 1).shape(), (Shape{2, 3}));
  EXPECT_EQ(cat({a, empty({0, 3}, f64())}, 0).shape(), (Shape{2, 3}));
}

TEST(Cat, BadInputs) {
  EXPECT_ANVIL_ERROR(cat({}), "cat: expected a non-empty list");
  EXPECT_ANVIL_ERROR(cat({randn({2, 3}), randn({2, 4})}, 0), "cat: sizes must match except in dim 0");
  EXPECT_ANVIL_ERROR(cat({randn({2, 3}), randn({2, 4})}, 0), "[2, 4]");
  EXPECT_ANVIL_ERROR(cat({randn({2, 3}), randn({2, 3, 1})}, 0), "same number of dims");
  EXPECT_ANVIL_ERROR(cat({randn({2, 3}), randn({2, 3})}, 2), "cat");
  EXPECT_ANVIL_ERROR(cat({scalar_tensor(1.0), scalar_tensor(2.0)}), "zero-dimensional");
  EXPECT_ANVIL_ERROR(cat({randn({2}), testing::fake_cuda_tensor({2})}), "same device");
  EXPECT_ANVIL_ERROR(cat({randn({2}), Tensor()}), "cat");
}

TEST(Stack, InsertsANewDim) {
  Tensor a = randn({2, 3}, f64()), b = randn({2, 3}, f64());
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (int64_t dim : {0, 1, 2, -1}) {
    SCOPED_TRACE(dim);
    int64_t d = dim < 0 ? dim + 3 : dim;
    Tensor s = stack({a, b}, dim);
    Shape want = {2, 3};
    want.insert(want.begin() + d, 2);
    ASSERT_EQ(s.shape(), want);
    auto vs = s.to_vector<double>();
    for (int64_t i = 0; i < s.numel(); ++i) {
      auto idx = testing::unravel(i, want);
      int64_t which = idx[d];
      idx.erase(idx.begin() + d);
      EXPECT_EQ(vs[i], at(which == 0 ? va : vb, {2, 3}, idx));
    }
  }
  Tensor s0 = stack({scalar_tensor(1.0), scalar_tensor(2.0)});
  EXPECT_EQ(s0.shape(), (Shape{2}));
  EXPECT_ANVIL_ERROR(stack({a, randn({3, 2})}), "stack");
  EXPECT_ANVIL_ERROR(stack({a, b}, 3), "stack");
  EXPECT_ANVIL_ERROR(stack({}), "stack");
}

TEST(Split, BySizeAndBySizes) {
  Tensor x = randn({7, 4}, f64());
  auto parts = split(x, 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].shape(), (Shape{3, 4}));
  EXPECT_EQ(parts[2].shape(), (Shape{1, 4}));
  // Views: they share x's storage.
  EXPECT_EQ(parts[1].storage().get(), x.storage().get());
  expect_near_all(cat(parts).to_vector<double>(), x.to_vector<double>(), 0);
  auto vx = x.to_vector<double>();
  auto cols = split(x, std::vector<int64_t>{1, 0, 3}, -1);
  ASSERT_EQ(cols.size(), 3u);
  EXPECT_EQ(cols[1].shape(), (Shape{7, 0}));
  auto v2 = cols[2].to_vector<double>();
  for (int64_t r = 0; r < 7; ++r)
    for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(v2[r * 3 + c], vx[r * 4 + 1 + c]);
  EXPECT_EQ(split(x, 10).size(), 1u);
  EXPECT_EQ(split(empty({0, 2}), 0).size(), 1u);

  EXPECT_ANVIL_ERROR(split(x, std::vector<int64_t>{3, 3}), "split: sizes [3, 3] sum to 6");
  EXPECT_ANVIL_ERROR(split(x, -1), "split");
  EXPECT_ANVIL_ERROR(split(x, 0), "split");
  EXPECT_ANVIL_ERROR(split(x, 2, 2), "split");
  EXPECT_ANVIL_ERROR(split(scalar_tensor(1.0), 1), "0-d");
}

TEST(Chunk, LikePyTorch) {
  Tensor x = randn({2, 10}, f64());
  auto c = chunk(x, 3, 1);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].shape(), (Shape{2, 4}));
  EXPECT_EQ(c[2].shape(), (Shape{2, 2}));
  EXPECT_EQ(chunk(randn({6}), 4).size(), 3u);  // pieces of 2: fewer chunks than asked
  EXPECT_EQ(chunk(randn({3}), 5).size(), 3u);
  auto e = chunk(empty({0}), 3);
  EXPECT_EQ(e.size(), 3u);
  expect_near_all(cat(c, 1).to_vector<double>(), x.to_vector<double>(), 0);
  EXPECT_ANVIL_ERROR(chunk(x, 0), "chunk");
}

TEST(ShapeGrad, CatStackSplitChunk) {
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return cat({in[0], in[1].t(), in[0]}, 1);
      },
      {randn({3, 2}, f64()), randn({4, 3}, f64())}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return cat({in[0], empty({0}, f64()), in[1]}, -2);
      },
      {randn({1, 2}, f64()), randn({3, 2}, f64())}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return stack({in[0], in[1] * in[0]}, 1);
      },
      {randn({3, 2}, f64()), randn({3, 2}, f64())}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        auto p = split(in[0], 2, 1);
        return p[0] * p[1] + p[2].sum();
      },
      {randn({3, 5}, f64())}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        auto p = chunk(in[0], 2, 0);
        return matmul(p[1], p[0].t());
      },
      {randn({4, 3}, f64())}));
  EXPECT_TRUE(testing::gradgradcheck(
      [](const std::vector<Tensor>& in) {
        return cat({in[0] * in[0], in[0]}, 0);
      },
      {randn({2, 3}, f64())}));
}

TEST(ShapeGrad, CatIntoWiderDtypeGivesGradientInInputDtype) {
  Tensor a = randn({2}, kFloat32).requires_grad_();
  Tensor b = randn({3}, f64()).requires_grad_();
  Tensor out = cat({a, b});
  EXPECT_EQ(out.dtype(), kFloat64);
  (out * arange(5, f64())).sum().backward();
  EXPECT_EQ(a.grad().dtype(), kFloat32);
  expect_near_all(a.grad().to_vector<double>(), {0, 1}, 0);
  expect_near_all(b.grad().to_vector<double>(), {2, 3, 4}, 0);
}

// Regressions from a review of core/: each test failed before its fix.
// slice's backward wrote the gradient into a zero tensor through an in-place
// copy_ on a view of it; under create_graph only the view took the history,
// so the returned full gradient had none and second derivatives were lost.
TEST(ShapeOpRegressions, SliceBackwardIsDifferentiable) {
  Tensor x = randn({6}, kFloat64).requires_grad_();
  Tensor z = x.slice(0, 1, 6, 2).pow(3).sum();  // elements 1, 3, 5
  Tensor dx = autograd::grad({z}, {x}, {}, {/*retain_graph=*/false, /*create_graph=*/true})[0];
  ASSERT_TRUE(dx.requires_grad()) << "the gradient of slice carries no history under create_graph";
  Tensor ddx = autograd::grad({dx.sum()}, {x})[0];
  std::vector<double> xv = x.to_vector<double>(), expected(6, 0.0);
  for (int i = 1; i < 6; i += 2) expected[i] = 6.0 * xv[i];
  EXPECT_LT(max_abs_diff(ddx, from_vector(expected, {6}, kFloat64)), 1e-10);
}

TEST(ShapeOpRegressions, SelectBackwardIsDifferentiable) {
  Tensor x = randn({3, 2}, kFloat64).requires_grad_();
  Tensor z = (x.select(0, 1) * x.select(0, 1)).sum();
  Tensor dx = autograd::grad({z}, {x}, {}, {false, true})[0];
  ASSERT_TRUE(dx.requires_grad());
  Tensor ddx = autograd::grad({(dx * dx).sum()}, {x})[0];  // d/dx sum((2 x_1)^2) = 8 x_1 on row 1
  std::vector<double> xv = x.to_vector<double>(), expected(6, 0.0);
  expected[2] = 8.0 * xv[2];
  expected[3] = 8.0 * xv[3];
  EXPECT_LT(max_abs_diff(ddx, from_vector(expected, {3, 2}, kFloat64)), 1e-10);
}

// expand accepted a negative size for a size-1 dim and returned a view with a
// negative numel; the error surfaced later in an unrelated op.
TEST(ShapeOpRegressions, ExpandRejectsNegativeSizes) {
  Tensor x = randn({1, 3});
  EXPECT_THROW(x.expand({-2, 3}), Error);
  EXPECT_THROW(x.expand({2, -3}), Error);
  EXPECT_EQ(x.expand({4, -1}).shape(), (Shape{4, 3}));
}

}  // namespace
}  // namespace anvil
