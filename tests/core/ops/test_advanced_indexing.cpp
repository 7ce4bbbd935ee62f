// x.index({...}) and index_put / index_put_: basic indices (views), integer
// index tensors (adjacent and separated, broadcast, negative), bool masks,
// values against loops over host data, gradients, and bad input.
#include <gtest/gtest.h>

#include <random>

#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using namespace anvil::indexing;
using testing::f64;
using testing::gradcheck;
using testing::gradgradcheck;

Tensor ints(std::vector<int64_t> v, const Shape& shape) { return from_vector(v, shape); }
Tensor ints(std::vector<int64_t> v) { return from_vector(v); }

// [4, 5, 6] with distinct values (element (a, b, c) is 100a + 10b + c).
Tensor x456() {
  std::vector<double> v;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 5; ++b)
      for (int c = 0; c < 6; ++c) v.push_back(100 * a + 10 * b + c);
  return from_vector(v, {4, 5, 6});
}
double at(int64_t a, int64_t b, int64_t c) { return 100.0 * a + 10.0 * b + c; }

TEST(Index, BasicIndicesGiveAViewWithPyTorchsShape) {
  Tensor x = x456();
  Tensor y = x.index({Slice(1, None, 2), 0, Ellipsis, None});  // x[1::2, 0, ..., None]
  ASSERT_EQ(y.shape(), (Shape{2, 6, 1}));
  auto v = y.to_vector<double>();
  for (int i = 0; i < 2; ++i)
    for (int c = 0; c < 6; ++c) EXPECT_EQ(v[i * 6 + c], at(1 + 2 * i, 0, c));
  y.fill_(-1.0);  // a view: writes reach x
  EXPECT_EQ(x.index({3, 0, 5}).item<double>(), -1.0);
  EXPECT_EQ(x.index({2, 0, 5}).item<double>(), at(2, 0, 5));

  Tensor z = x456().index({-1, Slice(None, None, 3), Slice(-2, None)});  // x[-1, ::3, -2:]
  ASSERT_EQ(z.shape(), (Shape{2, 2}));
  EXPECT_EQ(z.to_vector<double>(), (std::vector<double>{at(3, 0, 4), at(3, 0, 5), at(3, 3, 4), at(3, 3, 5)}));
  EXPECT_EQ(x456().index({"...", 1}).shape(), (Shape{4, 5}));
  EXPECT_EQ(x456().index({None, Ellipsis, None}).shape(), (Shape{1, 4, 5, 6, 1}));
  EXPECT_EQ(x456().index({Slice(10, 20)}).shape(), (Shape{0, 5, 6}));  // out-of-range bounds clamp
  EXPECT_EQ(x456().index({}).shape(), (Shape{4, 5, 6}));
}

TEST(Index, IntegerTensorOnOneDimKeepsItsPlace) {
  Tensor x = x456();
  Tensor idx = ints({3, -1, 0, 2, 2, -4}, {2, 3});
  Tensor y = x.index({Slice(), idx});  // x[:, idx] -> [4, 2, 3, 6]
  ASSERT_EQ(y.shape(), (Shape{4, 2, 3, 6}));
  auto v = y.to_vector<double>();
  auto iv = idx.to_vector<int64_t>();
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t k = 0; k < 6; ++k)
      for (int64_t c = 0; c < 6; ++c) {
        const int64_t b = iv[k] < 0 ? iv[k] + 5 : iv[k];
        EXPECT_EQ(v[(a * 6 + k) * 6 + c], at(a, b, c));
      }
  EXPECT_EQ(x.index({scalar_tensor(1, kInt64)}).shape(), (Shape{5, 6}));  // a 0-d index drops the dim
  EXPECT_EQ(x.index({Slice(), from_vector(std::vector<int32_t>{4, 0})}).shape(), (Shape{4, 2, 6}));  // int32
}

TEST(Index, AdjacentIndexTensorsBroadcastInPlace) {
  Tensor x = x456();
  Tensor i1 = ints({0, 4, 2}), i2 = ints({5, 1}, {2, 1});
  Tensor y = x.index({Slice(), i1, i2});  // B = [2, 3] replaces dims 1, 2 -> [4, 2, 3]
  ASSERT_EQ(y.shape(), (Shape{4, 2, 3}));
  auto v = y.to_vector<double>();
  const int64_t b1[3] = {0, 4, 2}, b2[2] = {5, 1};
  for (int a = 0; a < 4; ++a)
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c) EXPECT_EQ(v[(a * 2 + r) * 3 + c], at(a, b1[c], b2[r]));
}

TEST(Index, SeparatedIndexTensorsGoFirst) {
  Tensor x = x456();
  Tensor i0 = ints({3, 0}), i2 = ints({-1, 2});
  Tensor y = x.index({i0, Slice(1, 3), i2});  // dims 0 and 2 separated: [2, 2]
  ASSERT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{at(3, 1, 5), at(3, 2, 5), at(0, 1, 2), at(0, 2, 2)}));
  // Integers are applied first, as views (PyTorch's rule; NumPy differs):
  // x[:, 0, idx] indexes dim 1 of the [4, 6] view and x[0, :, idx] gives [5, 2].
  Tensor w = x.index({Slice(), 0, ints({1, 2})});
  EXPECT_EQ(x.index({0, Slice(), ints({1, 2})}).shape(), (Shape{5, 2}));
  EXPECT_EQ(w.shape(), (Shape{4, 2}));
  Tensor s = x.index({ints({1, 2}), Slice(), ints({0, 3})});
  EXPECT_EQ(s.shape(), (Shape{2, 5}));
  EXPECT_EQ(s.index({1, 4}).item<double>(), at(2, 4, 3));
}

TEST(Index, BoolMasksSelectInRowMajorOrder) {
  Tensor x = x456();
  Tensor m = zeros({4, 5}, kBool);
  m.index_put_({1, 2}, true);
  m.index_put_({3, 0}, true);
  m.index_put_({0, 4}, true);
  Tensor y = x.index({m});  // [3, 6], rows (0,4), (1,2), (3,0)
  ASSERT_EQ(y.shape(), (Shape{3, 6}));
  EXPECT_EQ(y.index({Slice(), 1}).to_vector<double>(), (std::vector<double>{at(0, 4, 1), at(1, 2, 1), at(3, 0, 1)}));
  Tensor col = x > 300.0;  // a full mask: masked_select's order
  EXPECT_EQ(x.index({col}).shape(), (Shape{29}));  // a = 3 except (3, 0, 0)
  EXPECT_EQ(x.index({col}).index({0}).item<double>(), at(3, 0, 1));
  Tensor m1 = from_vector(std::vector<uint8_t>{1, 0, 0, 1, 1, 0}).to(kBool);
  EXPECT_EQ(x.index({Ellipsis, m1}).shape(), (Shape{4, 5, 3}));
  EXPECT_EQ(x.index({true}).shape(), (Shape{1, 4, 5, 6}));
  EXPECT_EQ(x.index({false}).shape(), (Shape{0, 4, 5, 6}));
  EXPECT_EQ(x.index({Slice(), scalar_tensor(true, kBool)}).shape(), (Shape{4, 1, 5, 6}));
}

TEST(Index, GradientsOfMixedIndicesWithRepeats) {
  Tensor idx = ints({2, 0, 2, -1});
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return in[0].index({Slice(1, None, 2), idx, None});
      },
      {randn({5, 4, 3}, f64())}));
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return in[0].index({idx, 1, ints({0, 1, 0, 1})});
      },
      {randn({3, 4, 2}, f64())}));
  Tensor m = randn({3, 4}) > 0.0;
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return in[0].index({m}); }, {randn({3, 4, 2}, f64())}));
  EXPECT_TRUE(
      gradgradcheck([&](const std::vector<Tensor>& in) { return in[0].index({idx}).pow(2); }, {randn({4, 2}, f64())}));
}

TEST(Index, BadInputNamesTheOpAndShapes) {
  Tensor x = x456();
  EXPECT_ANVIL_ERROR(x.index({0, 5}), "index: index 5 is out of range for dim 0 of size 5");
  EXPECT_ANVIL_ERROR(x.index({ints({0, 4})}), "index: index 4 is out of range for dim 0 of size 4");
  EXPECT_ANVIL_ERROR(x.index({ints({-5})}), "index -5 is out of range");
  EXPECT_ANVIL_ERROR(x.index({zeros({4, 4}, kBool)}), "mask's shape [4, 4] does not match");
  EXPECT_ANVIL_ERROR(x.index({ones({2}, kFloat32)}), "int64, int32, bool or uint8, got [2] float32");
  EXPECT_ANVIL_ERROR(x.index({0, 0, 0, 0}), "too many indices for a tensor of dimension 3");
  EXPECT_ANVIL_ERROR(x.index({Ellipsis, 0, Ellipsis}), "only one Ellipsis");
  EXPECT_ANVIL_ERROR(x.index({Slice(0, 4, 0)}), "step must be positive");
  EXPECT_ANVIL_ERROR(x.index({ints({0, 1}), ints({0, 1, 2})}), "[2]");
  EXPECT_ANVIL_ERROR(x.index({"..x"}), "\"...\"");
  EXPECT_ANVIL_ERROR(x.index({testing::fake_cuda_tensor({2}, kInt64)}), "same device");
}

// ---- index_put ----

TEST(IndexPut, MaskFillAndValuesBroadcast) {
  Tensor x = x456();
  Tensor m = x.index({Slice(), Slice(), 0}) > 150.0;  // [4, 5]
  x.index_put_({m}, 0);
  auto v = x.to_vector<double>();
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 5; ++b)
      for (int c = 0; c < 6; ++c) EXPECT_EQ(v[(a * 5 + b) * 6 + c], at(a, b, 0) > 150 ? 0 : at(a, b, c));

  Tensor y = zeros({3, 4});
  y.index_put_({Slice(), ints({3, 1})}, tensor({7, 8}));  // values [2] broadcast to [3, 2]
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 8, 0, 7, 0, 8, 0, 7, 0, 8, 0, 7}));
  y.index_put_({1}, tensor({1, 2, 3, 4}));  // basic indices: a copy into the view
  EXPECT_EQ(y.index({1}).to_vector<double>(), (std::vector<double>{1, 2, 3, 4}));
  y.index_put_({Slice(None, None, 2), Slice(1, 3)}, 5.0);
  EXPECT_EQ(y.index({2}).to_vector<double>(), (std::vector<double>{0, 5, 5, 7}));
}

TEST(IndexPut, AccumulateSumsRepeatsAndOverwriteKeepsTheLast) {
  Tensor x = zeros({5}, kFloat64);
  x.index_put_({ints({1, 3, 1, 1, -1})}, tensor({1, 2, 3, 4, 5}, kFloat64), /*accumulate=*/true);
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{0, 8, 0, 2, 5}));
  Tensor y = zeros({5}, kFloat64);
  y.index_put_({ints({1, 3, 1})}, tensor({1, 2, 3}, kFloat64));  // CPU: last write wins
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 3, 0, 2, 0}));
  Tensor z = zeros({2, 3}, kInt64);  // both dims of a transposed view
  Tensor t = z.t();  // [3, 2]
  t.index_put_({ints({2, 0}), ints({1, 0})}, from_vector(std::vector<int64_t>{9, 4}), true);
  EXPECT_EQ(z.to_vector<int64_t>(), (std::vector<int64_t>{4, 0, 0, 0, 0, 9}));
}

TEST(IndexPut, OutOfPlaceLeavesSelfAndMatchesInPlace) {
  Tensor x = randn({4, 3});
  Tensor idx = ints({0, 2, 0});
  Tensor v = randn({3, 3});
  Tensor r = index_put(x, {idx}, v, true);
  Tensor expect = x.clone();
  expect.index_put_({idx}, v, true);
  EXPECT_EQ(r.to_vector<double>(), expect.to_vector<double>());
  EXPECT_NE(x.to_vector<double>(), r.to_vector<double>());
}

TEST(IndexPut, GradientsForSelfAndValues) {
  Tensor idx = ints({2, 0, 3});  // unique: overwrite's gradient is then exact
  for (bool accumulate : {false, true}) {
    SCOPED_TRACE(accumulate);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return index_put(in[0], {Slice(), idx}, in[1], accumulate);
        },
        {randn({2, 4}, f64()), randn({3}, f64())}));
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          Tensor y = in[0] * 2.0;  // in place on a non-leaf
          y.index_put_({idx, Slice(0, 2)}, in[1], accumulate);
          return y;
        },
        {randn({4, 3}, f64()), randn({3, 2}, f64())}));
  }
  Tensor rep = ints({1, 1, 0});  // repeats add up
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return index_put(in[0], {rep}, in[1], true); },
                        {randn({3, 2}, f64()), randn({3, 2}, f64())}));
  Tensor m = randn({3, 2}) > 0.0;
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return index_put(in[0], {m}, in[1].sum()); },
                        {randn({3, 2}, f64()), randn({2}, f64())}));
}

TEST(IndexPut, BadInput) {
  Tensor x = zeros({3, 4});
  EXPECT_ANVIL_ERROR(x.index_put_({ints({3})}, 1.0), "index 3 is out of range for dim 0 of size 3");
  EXPECT_ANVIL_ERROR(x.index_put_({ints({0, 1})}, ones({3, 4})), "cannot be broadcast to the indexed shape [2, 4]");
  EXPECT_ANVIL_ERROR(x.index_put_({ints({0})}, ones({4}, kFloat64)), "index_put_: expected values of self's dtype");
  EXPECT_ANVIL_ERROR(x.index_put_({zeros({3}, kBool), 0, 0}, 1.0), "too many indices");
  EXPECT_ANVIL_ERROR(x.index_put_({zeros({4}, kBool)}, 1.0), "mask's shape [4]");
  Tensor leaf = zeros({3}).requires_grad_();
  EXPECT_ANVIL_ERROR(leaf.index_put_({ints({0})}, 1.0), "index_put_");
}

}  // namespace
}  // namespace anvil
