// scatter (overwrite, scalar value, reduce add / multiply, in place),
// nonzero, masked_select, masked_scatter and take_along_dim: values against
// loops over host data, gradients, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::f64;
using testing::gradcheck;

Tensor ints(std::vector<int64_t> v, const Shape& shape) { return from_vector(v, shape); }

// index [rows, cols] of values in [0, size), a permutation prefix per column
// when `unique` (overwrite's gradient is exact only without repeats).
Tensor column_index(int64_t rows, int64_t cols, int64_t size, bool unique, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<int64_t> v(static_cast<size_t>(rows * cols));
  for (int64_t c = 0; c < cols; ++c) {
    std::vector<int64_t> perm(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), gen);
    for (int64_t r = 0; r < rows; ++r) v[r * cols + c] = unique ? perm[r] : static_cast<int64_t>(gen() % size);
  }
  return from_vector(v, {rows, cols});
}

TEST(Scatter, OverwriteAlongDim0MatchesLoopLastWins) {
  Tensor self = randn({5, 4}, f64()), src = randn({6, 4}, f64());
  Tensor idx = column_index(3, 4, 5, /*unique=*/false, 1);  // repeats: the last in index order wins on the CPU
  Tensor out = scatter(self, 0, idx, src);
  auto want = self.to_vector<double>();
  auto vs = src.to_vector<double>();
  auto vi = idx.to_vector<int64_t>();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) want[vi[r * 4 + c] * 4 + c] = vs[r * 4 + c];
  EXPECT_EQ(out.to_vector<double>(), want);
  EXPECT_EQ(self.scatter(0, idx, src).to_vector<double>(), want);  // the method
}

TEST(Scatter, ValueReduceAndNegativeDim) {
  Tensor self = randn({3, 5}, f64());
  Tensor idx = ints({4, 0, 4, 1, 1, 1}, {3, 2});
  auto vs = self.to_vector<double>();
  auto vi = idx.to_vector<int64_t>();
  // Along dim -1 (1): out[r][idx[r][c]] = value.
  auto want = vs;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) want[r * 5 + vi[r * 2 + c]] = 2.5;
  EXPECT_EQ(self.scatter(-1, idx, 2.5).to_vector<double>(), want);

  Tensor src = randn({3, 2}, f64());
  auto vsrc = src.to_vector<double>();
  auto add = vs, mul = vs;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) {
      add[r * 5 + vi[r * 2 + c]] += vsrc[r * 2 + c];
      mul[r * 5 + vi[r * 2 + c]] *= vsrc[r * 2 + c];
    }
  testing::expect_near_all(scatter(self, 1, idx, src, "add").to_vector<double>(), add, 1e-12);
  testing::expect_near_all(scatter(self, 1, idx, src, "multiply").to_vector<double>(), mul, 1e-12);
  testing::expect_near_all(self.scatter(1, idx, 3.0, "multiply").to_vector<double>(),
                           scatter(self, 1, idx, full({3, 2}, 3.0, f64()), "multiply").to_vector<double>(), 0);

  Tensor inplace = self.clone();
  inplace.scatter_(1, idx, src);
  EXPECT_EQ(inplace.to_vector<double>(), scatter(self, 1, idx, src).to_vector<double>());
  Tensor i32 = zeros({4}, kInt32);
  i32.scatter_(0, ints({3, 0}, {2}), 7, "add");
  EXPECT_EQ(i32.to_vector<int64_t>(), (std::vector<int64_t>{7, 0, 0, 7}));
  Tensor b = zeros({3}, kBool).scatter(0, ints({2}, {1}), true);
  EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1}));
}

TEST(Scatter, Gradients) {
  Tensor idx = column_index(3, 4, 5, /*unique=*/true, 2);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return scatter(in[0], 0, idx, in[1]); },
                        {randn({5, 4}, f64()), randn({4, 4}, f64())}));  // src larger than index: the rest gets 0
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Tensor>& in) { return scatter(in[0], 0, idx, 1.5); }, {randn({5, 4}, f64())}));
  Tensor rep = column_index(3, 4, 5, /*unique=*/false, 3);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return scatter(in[0], 0, rep, in[1], "add"); },
                        {randn({5, 4}, f64()), randn({3, 4}, f64())}));
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        Tensor y = in[0] + 0.0;
        y.scatter_(0, idx, in[1]);
        return y;
      },
      {randn({5, 4}, f64()), randn({3, 4}, f64())}));
}

TEST(Scatter, BadInput) {
  Tensor self = zeros({3, 4});
  EXPECT_ANVIL_ERROR(scatter(self, 0, ints({3}, {1, 1}), ones({1, 1})),
                     "scatter: index 3 is out of range for dim 0 of size 3");
  EXPECT_ANVIL_ERROR(scatter(self, 0, ints({0}, {1, 1}), ones({1, 1}, kFloat64)),
                     "scatter: expected self and src of the same dtype");
  EXPECT_ANVIL_ERROR(scatter(self, 0, ints({0}, {1}), ones({1})), "same number of dims");
  EXPECT_ANVIL_ERROR(scatter(self, 2, ints({0}, {1, 1}), ones({1, 1})), "scatter");
  EXPECT_ANVIL_ERROR(scatter(self, 0, ones({1, 1}), ones({1, 1})), "int64");
  EXPECT_ANVIL_ERROR(scatter(self, 0, ints({0}, {1, 1}), ones({1, 1}), "max"),
                     "reduce must be \"add\" or \"multiply\"");
  Tensor leaf = zeros({3, 4}, f64()).requires_grad_();
  EXPECT_ANVIL_ERROR(scatter(leaf, 0, ints({0}, {1, 1}), 2.0, "multiply"), "multiply\" is not implemented");
  EXPECT_ANVIL_ERROR(leaf.scatter_(0, ints({0}, {1, 1}), 2.0), "scatter_");
}

// ---- nonzero ----

std::vector<int64_t> naive_nonzero(const Tensor& x) {
  std::vector<int64_t> coords;
  auto v = x.to_vector<double>();
  for (int64_t i = 0; i < x.numel(); ++i)
    if (v[i] != 0) {
      auto c = testing::unravel(i, x.shape());
      coords.insert(coords.end(), c.begin(), c.end());
    }
  return coords;
}

TEST(Nonzero, CoordinatesInRowMajorOrderForEveryDtype) {
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    SCOPED_TRACE(dt);
    Tensor x = (randn({3, 4, 5}) * (randn({3, 4, 5}) > 0.3)).to(dt);
    Tensor nz = nonzero(x);
    EXPECT_EQ(nz.dtype(), kInt64);
    ASSERT_EQ(nz.dim(), 2);
    EXPECT_EQ(nz.shape()[1], 3);
    EXPECT_EQ(nz.to_vector<int64_t>(), naive_nonzero(x));
    Tensor strided = x.transpose(0, 2).index({indexing::Slice(std::nullopt, std::nullopt, 2)});
    EXPECT_EQ(strided.nonzero().to_vector<int64_t>(), naive_nonzero(strided.contiguous()));
  }
  EXPECT_EQ(nonzero(zeros({2, 3})).shape(), (Shape{0, 2}));
  EXPECT_EQ(nonzero(zeros({0, 3})).shape(), (Shape{0, 2}));
  EXPECT_EQ(nonzero(scalar_tensor(4.0)).shape(), (Shape{1, 0}));
  EXPECT_EQ(argwhere(tensor({0, 1, 1})).to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(nonzero(tensor({NAN, 0, -0.0})).to_vector<int64_t>(), (std::vector<int64_t>{0}));  // NaN counts, -0 not
}

// ---- masked_select / masked_scatter ----

TEST(MaskedSelect, BroadcastMaskValuesAndGradient) {
  Tensor x = randn({3, 4}, f64());
  Tensor m = randn({4}) > 0.0;  // broadcast over rows
  Tensor y = masked_select(x, m);
  std::vector<double> want;
  auto vx = x.to_vector<double>();
  auto vm = m.to_vector<int64_t>();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c)
      if (vm[c]) want.push_back(vx[r * 4 + c]);
  EXPECT_EQ(y.to_vector<double>(), want);
  EXPECT_EQ(y.dim(), 1);
  EXPECT_EQ(x.masked_select(m).to_vector<double>(), want);
  EXPECT_EQ(masked_select(tensor({1, 2}), ones({3, 2}, kBool)).numel(), 6);  // x broadcast too
  Tensor mm = randn({3, 4}) > 0.0;
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return masked_select(in[0], mm); }, {x}));
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Tensor>& in) { return masked_select(in[0], m); }, {randn({2, 4}, f64())}));
  EXPECT_ANVIL_ERROR(masked_select(x, ones({4}, kUInt8)), "masked_select: expected a bool mask, got [4] uint8");
  EXPECT_ANVIL_ERROR(masked_select(x, ones({3}, kBool)), "masked_select: shapes [3, 4] and [3]");
}

TEST(MaskedScatter, TakesSourceInOrderAndGradients) {
  Tensor self = randn({2, 3}, f64());
  Tensor m = from_vector(std::vector<uint8_t>{1, 0, 1, 0, 1, 1}, {2, 3}).to(kBool);
  Tensor source = randn({7}, f64());
  auto vs = source.to_vector<double>();
  auto want = self.to_vector<double>();
  want[0] = vs[0];
  want[2] = vs[1];
  want[4] = vs[2];
  want[5] = vs[3];
  EXPECT_EQ(masked_scatter(self, m, source).to_vector<double>(), want);
  EXPECT_EQ(self.masked_scatter(m, source.view({7, 1}).expand({7, 2})).shape(), (Shape{2, 3}));
  Tensor inplace = self.clone();
  inplace.masked_scatter_(m, source);
  EXPECT_EQ(inplace.to_vector<double>(), want);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return masked_scatter(in[0], m, in[1]); },
                        {self, randn({3, 3}, f64())}));
  Tensor row = from_vector(std::vector<uint8_t>{0, 1, 1}, {3}).to(kBool);  // broadcast over rows
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return masked_scatter(in[0], row, in[1]); },
                        {self, randn({5}, f64())}));
  EXPECT_ANVIL_ERROR(masked_scatter(self, m, randn({3}, f64())),
                     "masked_scatter: mask [2, 3] bool cpu selects 4 elements");
  EXPECT_ANVIL_ERROR(masked_scatter(self, m, randn({7})), "same dtype");
  EXPECT_ANVIL_ERROR(self.clone().masked_scatter_(ones({3, 2, 3}, kBool), randn({20}, f64())),
                     "must broadcast to self");
}

// ---- take_along_dim ----

TEST(TakeAlongDim, GathersAfterBroadcastingAndGradient) {
  Tensor x = randn({3, 4}, f64());
  Tensor idx = ints({3, 0, 1, 1, 2, 0}, {3, 2});
  Tensor y = take_along_dim(x, idx, 1);
  auto vx = x.to_vector<double>();
  auto vi = idx.to_vector<int64_t>();
  std::vector<double> want;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) want.push_back(vx[r * 4 + vi[r * 2 + c]]);
  EXPECT_EQ(y.to_vector<double>(), want);
  // indices [1, 2] broadcast over x's 3 rows; x [1, 4] would broadcast over indices' rows.
  Tensor row = ints({2, 3}, {1, 2});
  Tensor yb = x.take_along_dim(row, 1);
  ASSERT_EQ(yb.shape(), (Shape{3, 2}));
  EXPECT_EQ(yb.index({2, 1}).item<double>(), vx[2 * 4 + 3]);
  EXPECT_EQ(take_along_dim(x, ints({5, 0}, {2})).to_vector<double>(),
            (std::vector<double>{vx[5], vx[0]}));  // flattened
  // The argsort-style use: values at argmax.
  Tensor am = x.argmax(1, true);
  EXPECT_EQ(take_along_dim(x, am, 1).squeeze(1).to_vector<double>(), std::get<0>(x.max(1)).to_vector<double>());
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return take_along_dim(in[0], row, 1); }, {x}));
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Tensor>& in) { return take_along_dim(in[0], idx, -1); }, {randn({1, 4}, f64())}));
  EXPECT_ANVIL_ERROR(take_along_dim(x, ints({0}, {1}), 0),
                     "take_along_dim: input and indices must have the same number of dims");
  EXPECT_ANVIL_ERROR(take_along_dim(x, ones({3, 1}), 1),
                     "take_along_dim: expected int64 (or int32) indices, got [3, 1] float32");
  EXPECT_ANVIL_ERROR(take_along_dim(x, ints({4}, {1, 1}), 1), "gather: index 4 is out of range");
}

}  // namespace
}  // namespace anvil
