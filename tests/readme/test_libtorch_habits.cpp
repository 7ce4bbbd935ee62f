// The libtorch habits the README's "Tensor API" section promises: each
// one-liner below is written as it is in libtorch, with torch:: replaced by
// anvil:: (the lines that need more than that say so), and checked for its
// values, shape and dtype; the new differentiable ops against finite
// differences in float64; and the bad input they refuse, by name. Only
// <anvil/anvil.h> is included, as in a port (tests/core/gradcheck.h aside).
#include <anvil/anvil.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "tests/core/gradcheck.h"

namespace {

using anvil::Tensor;

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
std::vector<int64_t> ints(const Tensor& t) { return t.to_vector<int64_t>(); }
using Doubles = std::vector<double>;
using Ints = std::vector<int64_t>;

// t's values are `want` (within float32's rounding of them).
void expect_values(const Tensor& t, const Doubles& want) {
  const Doubles got = values(t);
  ASSERT_EQ(got.size(), want.size()) << t;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6 * std::max(1.0, std::abs(want[i]))) << "element " << i << " of " << t;
}

// [[0, 1, 2], [3, 4, 5]] in float32.
Tensor x23() { return anvil::arange(6, anvil::kFloat).view({2, 3}); }

// Runs f and expects an anvil::Error whose message names every one of `words`.
template <typename F> void expect_error_naming(F f, std::initializer_list<const char*> words) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const anvil::Error& e) {
    const std::string message = e.what();
    for (const char* w : words) EXPECT_NE(message.find(w), std::string::npos) << "'" << w << "' not in: " << message;
  }
}

// ---- 1. integer dims, beside the Shape forms ----

TEST(LibtorchHabits, ReductionsTakeOneIntegerDim) {
  const Tensor x = x23();
  expect_values(x.sum(1), {3, 12});
  expect_values(anvil::sum(x, 1), {3, 12});
  const Tensor m = x.mean(-1, true);
  EXPECT_EQ(m.sizes(), (anvil::Shape{2, 1}));
  expect_values(m, {1, 4});
  expect_values(std::get<0>(x.max(1)), {2, 5});
  EXPECT_EQ(ints(std::get<1>(x.max(1))), (Ints{2, 2}));
  EXPECT_EQ(std::get<1>(x.max(1)).scalar_type(), anvil::kLong);
  auto [min_values, min_indices] = x.min(1);
  expect_values(min_values, {0, 3});
  EXPECT_EQ(ints(min_indices), (Ints{0, 0}));
  EXPECT_NEAR(values(x.softmax(-1).sum(-1))[1], 1.0, 1e-6);
  EXPECT_EQ(ints(x.argmax(1)), (Ints{2, 2}));
  expect_values(x.prod(1), {0, 60});
  expect_values(x.var(1), {1, 1});
  expect_values(x.std(1), {1, 1});
  EXPECT_NEAR(x.norm().item<double>(), std::sqrt(55.0), 1e-5);
  EXPECT_NEAR(values(x.norm(2, 1))[1], std::sqrt(50.0), 1e-5);
  expect_values(anvil::var(x, 1, /*unbiased=*/false), {2.0 / 3, 2.0 / 3});
}

TEST(LibtorchHabits, BracedDimListsStillMeanTheShapeForms) {
  const Tensor x = x23();
  EXPECT_EQ(x.sum({0, 1}).item<double>(), 15);
  expect_values(x.sum({1}), {3, 12});
  EXPECT_EQ(x.sum({}).item<double>(), 15);  // all dims, as an empty Shape always meant
  expect_values(anvil::mean(x, {0}, true), {1.5, 2.5, 3.5});
}

// ---- 1. comparison and logical/bitwise operators ----

TEST(LibtorchHabits, ComparisonOperatorsGiveBoolTensors) {
  const Tensor x = x23(), y = anvil::full({2, 3}, 2.0);
  EXPECT_EQ((x > 2).scalar_type(), anvil::kBool);
  EXPECT_EQ(ints(x > 2), (Ints{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(ints(2 < x), (Ints{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(ints(x == y), (Ints{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(ints(x != y), (Ints{1, 1, 0, 1, 1, 1}));
  EXPECT_EQ(ints(x >= 4), (Ints{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(ints(x <= 1.5), (Ints{1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(ints(1 >= x), (Ints{1, 1, 0, 0, 0, 0}));
}

TEST(LibtorchHabits, BitwiseOperatorsOnIntegersAndBools) {
  const Tensor a = anvil::tensor({12, 10, 0}).to(anvil::kInt), b = anvil::tensor({10, 6, 5}).to(anvil::kInt);
  EXPECT_EQ(ints(a & b), (Ints{8, 2, 0}));
  EXPECT_EQ(ints(a | b), (Ints{14, 14, 5}));
  EXPECT_EQ(ints(a ^ b), (Ints{6, 12, 5}));
  EXPECT_EQ(ints(~a), (Ints{-13, -11, -1}));
  EXPECT_EQ((a & b).scalar_type(), anvil::kInt);
  EXPECT_EQ(ints(a & 8), (Ints{8, 8, 0}));
  EXPECT_EQ(ints(anvil::bitwise_not(anvil::tensor({1, 254}).to(anvil::kByte))), (Ints{254, 1}));

  const Tensor p = anvil::tensor({1, 1, 0, 0}).to(anvil::kBool), q = anvil::tensor({1, 0, 1, 0}).to(anvil::kBool);
  EXPECT_EQ(ints(p & q), (Ints{1, 0, 0, 0}));
  EXPECT_EQ(ints(p | q), (Ints{1, 1, 1, 0}));
  EXPECT_EQ(ints(p ^ q), (Ints{0, 1, 1, 0}));
  EXPECT_EQ(ints(~p), (Ints{0, 0, 1, 1}));
  EXPECT_EQ((p & q).scalar_type(), anvil::kBool);
  EXPECT_EQ(ints(!p), (Ints{0, 0, 1, 1}));
  EXPECT_EQ((!a).scalar_type(), anvil::kBool);  // logical not of any dtype
  EXPECT_EQ(ints(!a), (Ints{0, 0, 1}));
  const Tensor x = x23();
  EXPECT_EQ(ints((x > 1) & (x < 4)), (Ints{0, 0, 1, 1, 0, 0}));
}

TEST(LibtorchHabits, BitwiseOpsRefuseFloatsNamingTheOpAndDtype) {
  const Tensor f = x23(), i = anvil::ones({2, 3}, anvil::kLong);
  expect_error_naming([&] { (void)(f & i); }, {"bitwise_and", "float32", "int64", "[2, 3]"});
  expect_error_naming([&] { (void)(i | f); }, {"bitwise_or", "float32"});
  expect_error_naming([&] { (void)(f ^ 1); }, {"bitwise_xor", "float32"});
  expect_error_naming([&] { (void)~f; }, {"bitwise_not", "float32", "[2, 3]", "integer or bool"});
}

// ---- 1. scalars on either side ----

TEST(LibtorchHabits, ScalarsOnEitherSideOfEveryArithmeticOperator) {
  const Tensor x = x23();
  expect_values(2.0 * x, {0, 2, 4, 6, 8, 10});
  expect_values(1 - x, {1, 0, -1, -2, -3, -4});
  expect_values(x / 2, {0, 0.5, 1, 1.5, 2, 2.5});
  expect_values(6 / (x + 1), {6, 3, 2, 1.5, 1.2, 1});
  EXPECT_EQ(values(x + 1), values(1 + x));
  EXPECT_EQ((2.0 * x).scalar_type(), anvil::kFloat);  // a scalar does not promote
  Tensor y = x.clone();
  y += 1;
  y *= 2;
  expect_values(y, {2, 4, 6, 8, 10, 12});
}

TEST(LibtorchHabits, ScalarsInWhereClampMaximumMinimum) {
  const Tensor x = x23();
  expect_values(anvil::where(x > 2, x, 0.0), {0, 0, 0, 3, 4, 5});
  expect_values(anvil::where(x > 2, 0.0, x), {0, 1, 2, 0, 0, 0});
  EXPECT_EQ(anvil::where(x > 2, x, 0.0).scalar_type(), anvil::kFloat);
  expect_values(anvil::clamp(x, 1, 4), {1, 1, 2, 3, 4, 4});
  expect_values(x.clamp(1, 4), {1, 1, 2, 3, 4, 4});
  expect_values(x.clamp({}, 3), {0, 1, 2, 3, 3, 3});  // {}: no lower bound, as libtorch's nullopt
  expect_values(x.clamp_min(2), {2, 2, 2, 3, 4, 5});
  expect_values(x.clamp_max(2), {0, 1, 2, 2, 2, 2});
  expect_values(anvil::maximum(x, 2.5), {2.5, 2.5, 2.5, 3, 4, 5});
  expect_values(anvil::minimum(x, 2.5), {0, 1, 2, 2.5, 2.5, 2.5});
  expect_error_naming([&] { (void)x.clamp({}, {}); }, {"clamp", "at least one of min and max"});
}

// ---- 1. metadata spelled as libtorch ----

TEST(LibtorchHabits, MetadataAsLibtorchSpellsIt) {
  Tensor x = x23();
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(x.size(0), 2);
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_EQ(x.dim(), 2);
  EXPECT_EQ(x.numel(), 6);
  EXPECT_EQ(x.scalar_type(), anvil::kFloat);
  EXPECT_TRUE(x.is_cpu());
  EXPECT_FALSE(x.is_cuda());
  EXPECT_EQ(x.element_size(), 4);
  EXPECT_EQ(x.data_ptr<float>()[5], 5.0f);
  EXPECT_EQ(x.data_ptr(), static_cast<void*>(x.data_ptr<float>()));
  expect_error_naming([&] { (void)x.data_ptr<double>(); }, {"float32", "float64"});
}

// ---- 1. views, copies and in-place ops ----

TEST(LibtorchHabits, ViewAsRepeatFlipRollUnbind) {
  const Tensor x = x23();
  const Tensor flat = anvil::arange(6, anvil::kFloat);
  EXPECT_EQ(flat.view_as(x).sizes(), x.sizes());
  EXPECT_EQ(anvil::tensor({1.0, 2.0, 3.0}).expand_as(x).sizes(), x.sizes());

  const Tensor r = x.repeat({2, 1});
  EXPECT_EQ(r.sizes(), (anvil::Shape{4, 3}));
  expect_values(r, {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5});
  expect_values(anvil::tensor({1.0, 2.0}).repeat({2, 2}), {1, 2, 1, 2, 1, 2, 1, 2});
  EXPECT_EQ(anvil::tensor({1.0, 2.0}).repeat({3, 1, 2}).sizes(), (anvil::Shape{3, 1, 4}));

  expect_values(x.flip({1}), {2, 1, 0, 5, 4, 3});
  expect_values(x.flip({0, 1}), {5, 4, 3, 2, 1, 0});
  expect_values(anvil::flip(x, 0), {3, 4, 5, 0, 1, 2});

  expect_values(x.roll(1, 1), {2, 0, 1, 5, 3, 4});
  expect_values(x.roll(-1, 1), {1, 2, 0, 4, 5, 3});
  expect_values(x.roll(1), {5, 0, 1, 2, 3, 4});  // flattened, shape kept
  EXPECT_EQ(x.roll(1).sizes(), x.sizes());
  expect_values(anvil::roll(x, {1, 4}, {0, 1}), {5, 3, 4, 2, 0, 1});

  const std::vector<Tensor> rows = x.unbind(0);
  ASSERT_EQ(rows.size(), 2u);
  expect_values(rows[1], {3, 4, 5});
  expect_values(anvil::unbind(x, 1)[2], {2, 5});

  // New memory, as in PyTorch, even when nothing moved.
  Tensor same = x.roll(0, 0);
  same.fill_(7);
  EXPECT_EQ(x.sum().item<double>(), 15);
}

TEST(LibtorchHabits, AddSubWithAlphaAndTheInPlaceUpdates) {
  const Tensor x = x23(), y = anvil::ones({2, 3});
  expect_values(x.add(y, 2), {2, 3, 4, 5, 6, 7});
  expect_values(x.sub(y, 0.5), {-0.5, 0.5, 1.5, 2.5, 3.5, 4.5});
  expect_values(anvil::add(x, y, 2), {2, 3, 4, 5, 6, 7});

  Tensor p = x.clone();
  p.add_(y, -2);
  expect_values(p, {-2, -1, 0, 1, 2, 3});
  p = x.clone();
  p.addcmul_(x, x, 0.5);  // p + 0.5 * x * x
  expect_values(p, {0, 1.5, 4, 7.5, 12, 17.5});
  p = x.clone();
  p.addcdiv_(y, x + 1, 6);  // p + 6 / (x + 1)
  expect_values(p, {6, 4, 4, 4.5, 5.2, 6});
  p = x.clone();
  p.lerp_(anvil::full({2, 3}, 10.0), 0.5);
  expect_values(p, {5, 5.5, 6, 6.5, 7, 7.5});
  p = x.clone();
  p.clamp_(1, 4);
  expect_values(p, {1, 1, 2, 3, 4, 4});
  p.clamp_min_(2);
  expect_values(p, {2, 2, 2, 3, 4, 4});
  p.clamp_max_(3);
  expect_values(p, {2, 2, 2, 3, 3, 3});

  // As in PyTorch, a leaf that requires grad refuses in-place updates.
  Tensor leaf = anvil::ones({2}).requires_grad_();
  expect_error_naming([&] { leaf.addcmul_(leaf, leaf); }, {"addcmul_"});
}

// ---- the gradients of the new differentiable ops, in float64 ----

using anvil::testing::gradcheck;
using Inputs = std::vector<Tensor>;

Tensor f64(const anvil::Shape& shape) { return anvil::randn(shape, anvil::kDouble); }

TEST(LibtorchHabits, NewOpsGradientsMatchFiniteDifferences) {
  anvil::manual_seed(3);
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].repeat({2, 1, 3}); }, {f64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].flip({0, 2}); }, {f64({2, 3, 4})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].roll({1, -2}, {0, 1}); }, {f64({3, 4})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].roll(2); }, {f64({3, 2})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].unbind(1)[1] * 3.0 + in[0].unbind(1)[2]; }, {f64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].add(in[1], 2.5); }, {f64({2, 3}), f64({3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].sub(in[1], 0.5); }, {f64({2, 3}), f64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return anvil::addcmul(in[0], in[1], in[2], 0.5); },
                        {f64({2, 3}), f64({2, 3}), f64({3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return anvil::addcdiv(in[0], in[1], in[2].abs() + 1.0, 2); },
                        {f64({2, 3}), f64({2, 3}), f64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return anvil::lerp(in[0], in[1], in[2]); },
                        {f64({2, 3}), f64({2, 3}), f64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return anvil::where(in[0] > 0, in[0], 0.0); }, {f64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return anvil::maximum(in[0], 0.1); }, {f64({2, 3})}));
  // Points away from the kink at 0.2.
  const Tensor away = anvil::tensor({-1.0, -0.5, 0.7, 1.5}, anvil::kDouble);
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].clamp_min(0.2); }, {away}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].clamp_max(0.2); }, {away}));
  // The in-place updates on a non-leaf record their history.
  EXPECT_TRUE(gradcheck(
      [](const Inputs& in) {
        Tensor p = in[0] * 1.0;
        p.addcmul_(in[1], in[1], 0.5).lerp_(in[1], 0.25);
        return p;
      },
      {f64({2, 3}), f64({2, 3})}));
}

TEST(LibtorchHabits, BadDimsForRepeatFlipRollNameTheOpAndShape) {
  const Tensor x = x23();
  expect_error_naming([&] { (void)x.repeat({2}); }, {"repeat", "[2, 3]", "at least one per dim"});
  expect_error_naming([&] { (void)x.repeat({2, -1}); }, {"repeat", "non-negative"});
  expect_error_naming([&] { (void)x.flip({2}); }, {"flip", "dim 2", "out of range"});
  expect_error_naming([&] { (void)x.flip({1, -1}); }, {"flip", "more than once", "[2, 3]"});
  expect_error_naming([&] { (void)x.roll({1, 2}, {0}); }, {"roll", "one shift per dim"});
  expect_error_naming([&] { (void)x.roll({1, 2}); }, {"roll", "one shift"});
  expect_error_naming([&] { (void)x.roll(1, 5); }, {"roll", "dim 5"});
  expect_error_naming([&] { (void)anvil::scalar_tensor(1.0).unbind(0); }, {"unbind", "0-d"});
}

// ---- 2. indexing: x.index({...}), index_put_, masks, scatter, nonzero ----

TEST(LibtorchHabits, IndexWithSliceNoneEllipsisAndIntegers) {
  using namespace anvil::indexing;
  const Tensor x = anvil::arange(24, anvil::kFloat).view({2, 3, 4});
  const Tensor y = x.index({Slice(1, None, 2), 0, Ellipsis, None});  // x[1::2, 0, ..., None]
  EXPECT_EQ(y.sizes(), (anvil::Shape{1, 4, 1}));
  expect_values(y, {12, 13, 14, 15});
  expect_values(x.index({-1, Slice(None, None, 2), -1}), {15, 23});  // x[-1, ::2, -1]
  EXPECT_EQ(x.index({"...", 0}).sizes(), (anvil::Shape{2, 3}));
  x.index({0, 0, 0}).fill_(-1.0);  // basic indexing is a view
  EXPECT_EQ(x.index({0, 0, 0}).item<double>(), -1.0);
}

TEST(LibtorchHabits, IndexWithTensorsAndMasks) {
  using namespace anvil::indexing;
  const Tensor x = x23();
  const Tensor rows = anvil::tensor({1, 0, 1}).to(anvil::kLong), cols = anvil::tensor({2, 2, -3}).to(anvil::kLong);
  expect_values(x.index({rows, cols}), {5, 2, 3});  // x[rows, cols]: pairs
  EXPECT_EQ(x.index({Slice(), rows}).sizes(), (anvil::Shape{2, 3}));
  expect_values(x.index({x > 2}), {3, 4, 5});  // x[x > 2]
  expect_values(x.masked_select(x.index({0}) > 0), {1, 2, 4, 5});  // the mask broadcasts over rows
  EXPECT_EQ(ints(x.nonzero()), (Ints{0, 1, 0, 2, 1, 0, 1, 1, 1, 2}));
  EXPECT_EQ(x.nonzero().scalar_type(), anvil::kLong);
  EXPECT_EQ(ints(anvil::nonzero(x > 3)), (Ints{1, 1, 1, 2}));
}

TEST(LibtorchHabits, IndexPutMasksAccumulateAndScatter) {
  using namespace anvil::indexing;
  Tensor x = x23();
  x.index_put_({x > 3}, 0);  // x[x > 3] = 0
  expect_values(x, {0, 1, 2, 3, 0, 0});
  x.index_put_({Slice(), 0}, anvil::tensor({7, 8}));  // x[:, 0] = [7, 8]
  expect_values(x, {7, 1, 2, 8, 0, 0});
  Tensor counts = anvil::zeros({3});
  const Tensor bins = anvil::tensor({2, 0, 2, 2}).to(anvil::kLong);
  counts.index_put_({bins}, anvil::ones({4}), /*accumulate=*/true);  // repeats add up
  expect_values(counts, {1, 0, 3});
  const Tensor idx = anvil::tensor({2, 0}).to(anvil::kLong).view({1, 2});
  expect_values(anvil::zeros({2, 3}).scatter(1, idx, anvil::ones({1, 2})), {1, 0, 1, 0, 0, 0});
  expect_values(anvil::zeros({2, 3}).scatter(1, idx, 5.0), {5, 0, 5, 0, 0, 0});
  expect_values(anvil::ones({2, 3}).scatter(1, idx, anvil::full({1, 2}, 3.0), "multiply"), {3, 1, 3, 1, 1, 1});
  expect_values(x23().masked_scatter(x23() > 3, anvil::tensor({-1, -2})), {0, 1, 2, 3, -1, -2});
  expect_values(x23().take_along_dim(x23().argmax(1, true), 1), {2, 5});
  expect_values(anvil::take_along_dim(x23(), anvil::tensor({5, 0}).to(anvil::kLong)), {5, 0});
}

TEST(LibtorchHabits, IndexingGradientsMatchFiniteDifferences) {
  using namespace anvil::indexing;
  anvil::manual_seed(5);
  const Tensor idx = anvil::tensor({2, 0, 2}).to(anvil::kLong), m = anvil::randn({3, 4}) > 0;
  EXPECT_TRUE(gradcheck([&](const Inputs& in) { return in[0].index({Slice(), idx}); }, {f64({2, 3})}));
  EXPECT_TRUE(gradcheck([&](const Inputs& in) { return in[0].index({m}); }, {f64({3, 4})}));
  EXPECT_TRUE(gradcheck(
      [&](const Inputs& in) {
        Tensor y = in[0] * 1.0;
        y.index_put_({Slice(), idx}, in[1], /*accumulate=*/true);
        return y;
      },
      {f64({2, 3}), f64({3})}));
  EXPECT_TRUE(gradcheck([&](const Inputs& in) { return in[0].masked_select(m); }, {f64({3, 4})}));
  EXPECT_TRUE(gradcheck([&](const Inputs& in) { return in[0].masked_scatter(m, in[1]); }, {f64({3, 4}), f64({12})}));
  const Tensor cols = anvil::tensor({1, 0, 2}).to(anvil::kLong).view({1, 3});
  EXPECT_TRUE(gradcheck([&](const Inputs& in) { return in[0].scatter(1, cols, in[1]); }, {f64({2, 3}), f64({1, 3})}));
  EXPECT_TRUE(gradcheck([&](const Inputs& in) { return in[0].take_along_dim(cols, 1); }, {f64({2, 3})}));
}

TEST(LibtorchHabits, IndexingBadInputNamesTheOpShapesAndDtypes) {
  using namespace anvil::indexing;
  const Tensor x = x23();
  expect_error_naming([&] { (void)x.index({0, 3}); }, {"index", "index 3", "size 3"});
  expect_error_naming([&] { (void)x.index({anvil::tensor({2}).to(anvil::kLong)}); },
                      {"index", "index 2", "dim 0", "size 2"});
  expect_error_naming([&] { (void)x.index({anvil::ones({3}, anvil::kBool)}); }, {"index", "mask", "[3]", "[2, 3]"});
  expect_error_naming([&] { (void)x.index({anvil::ones({1})}); }, {"index", "float32"});
  expect_error_naming([&] { (void)x.masked_select(anvil::ones({2, 3})); }, {"masked_select", "bool", "float32"});
  expect_error_naming([&] { (void)x.scatter(0, anvil::ones({1, 1}), 1.0); }, {"scatter", "int64", "float32"});
}

// ---- 1. printing with only <anvil/anvil.h> ----

std::shared_ptr<anvil::nn::Sequential> small_model() {
  return std::make_shared<anvil::nn::Sequential>(std::make_shared<anvil::nn::Linear>(3, 4),
                                                 std::make_shared<anvil::nn::ReLU>(),
                                                 std::make_shared<anvil::nn::Linear>(4, 1, false));
}

TEST(LibtorchHabits, CoutPrintsTensorsAndModuleTrees) {
  const auto model = small_model();
  const std::string tree =
      "Sequential(\n"
      "  (0): Linear(in_features=3, out_features=4, bias=True)\n"
      "  (1): ReLU()\n"
      "  (2): Linear(in_features=4, out_features=1, bias=False)\n"
      ")";
  ::testing::internal::CaptureStdout();
  std::cout << anvil::tensor({1.0, 2.0}) << "\n";
  std::cout << *model << "\n";
  std::cout << model << "\n";
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(out, "tensor([1., 2.])\n" + tree + "\n" + tree + "\n");
}

// ---- 4. options, dtypes, devices and namespaces as libtorch spells them ----

TEST(LibtorchHabits, OptionsChainAsInLibtorchAndStillAggregate) {
  const auto linear = std::make_shared<anvil::nn::Linear>(anvil::nn::LinearOptions(3, 4).bias(false));
  EXPECT_FALSE(linear->bias.defined());
  EXPECT_EQ(linear->weight.sizes(), (anvil::Shape{4, 3}));

  const auto conv_options = anvil::nn::Conv2dOptions(3, 8, 3).stride(2).padding(1);
  EXPECT_EQ(conv_options.in_channels, 3);
  EXPECT_EQ(conv_options.stride, anvil::nn::Size2(2));
  EXPECT_EQ(conv_options.padding(), anvil::nn::Size2(1));  // libtorch's getter
  const auto conv = std::make_shared<anvil::nn::Conv2d>(conv_options);
  EXPECT_EQ(conv->forward(anvil::zeros({1, 3, 8, 8})).sizes(), (anvil::Shape{1, 8, 4, 4}));
  // The aggregate spelling anvil code uses keeps working, side by side.
  const anvil::nn::Conv2dOptions aggregate{.in_channels = 3, .out_channels = 8, .kernel_size = {3, 5}, .bias = false};
  EXPECT_EQ(aggregate.kernel_size.w, 5);
  EXPECT_FALSE(aggregate.bias);

  const auto bn = anvil::nn::BatchNorm2dOptions(16).eps(1e-3).momentum(0.2).affine(false);
  EXPECT_EQ(bn.num_features, 16);
  EXPECT_EQ(bn.eps, 1e-3);
  EXPECT_EQ(*bn.momentum, 0.2);
  EXPECT_EQ(anvil::nn::LayerNormOptions({4, 5}).eps(1e-6).normalized_shape, (anvil::Shape{4, 5}));
  EXPECT_EQ(anvil::nn::MaxPool2dOptions(3).stride(2).stride->h, 2);
  EXPECT_EQ(anvil::nn::AvgPool2dOptions(2).count_include_pad(false).count_include_pad, false);
  EXPECT_EQ(anvil::nn::EmbeddingOptions(10, 4).embedding_dim, 4);
  EXPECT_EQ(anvil::nn::Dropout(anvil::nn::DropoutOptions().p(0.25)).p, 0.25);

  const auto sgd = anvil::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-4);
  EXPECT_EQ(sgd.lr, 0.1);
  EXPECT_EQ(sgd.momentum, 0.9);
  EXPECT_TRUE(sgd.nesterov);
  const auto adam = anvil::optim::AdamOptions(1e-3).betas({0.8, 0.99}).weight_decay(0.01);
  EXPECT_EQ(adam.beta1, 0.8);
  EXPECT_EQ(adam.beta2, 0.99);
  const auto model = small_model();
  anvil::optim::SGD optimizer(model->parameters(), anvil::optim::SGDOptions(0.01).momentum(0.5));
  optimizer.zero_grad();
}

// Elementwise rows, scans, sorts, logical reductions, triangles, spaced
// values and samplers, as libtorch spells them (torch:: -> anvil::).
TEST(LibtorchHabits, ElementwiseRowsAsInLibtorch) {
  const Tensor x = anvil::tensor({-2.5, -0.5, 0.5, 2.5});
  expect_values(x.trunc(), {-2, -0.0, 0, 2});
  expect_values(x.fmod(2), {-0.5, -0.5, 0.5, 0.5});
  expect_values(x.remainder(2), {1.5, 1.5, 0.5, 0.5});
  expect_values(anvil::erfinv(anvil::erf(x / 4)), {-0.625, -0.125, 0.125, 0.625});
  EXPECT_EQ(ints(anvil::isinf(anvil::tensor({1.0, INFINITY}))), (Ints{0, 1}));
  EXPECT_EQ(ints(anvil::tensor({NAN, 1.0}).isfinite()), (Ints{0, 1}));
  expect_values(anvil::leaky_relu(x, 0.1), {-0.25, -0.05, 0.5, 2.5});
  expect_values(anvil::elu(x), {std::expm1(-2.5), std::expm1(-0.5), 0.5, 2.5});
  expect_values(anvil::softplus(x, 1.0, 20.0), {std::log1p(std::exp(-2.5)), std::log1p(std::exp(-0.5)),
                                                std::log1p(std::exp(0.5)), std::log1p(std::exp(2.5))});
  expect_values(anvil::hardswish(x), {-2.5 * 0.5 / 6, -0.5 * 2.5 / 6, 0.5 * 3.5 / 6, 2.5 * 5.5 / 6});
  expect_values(anvil::mish(anvil::tensor({0.0})), {0});
  expect_values(anvil::tensor({0.3, 2.7}).log1p().expm1().floor(), {0, 2});
  expect_values(anvil::tensor({0.3, 2.7}).ceil(), {1, 3});
  expect_values(anvil::tensor({0.5, 1.5, 2.5}).round(), {0, 2, 2});  // half to even, as torch.round
}

TEST(LibtorchHabits, ScansSortsAndLogicalReductions) {
  const Tensor x = x23();  // [[0, 1, 2], [3, 4, 5]]
  expect_values(x.cumsum(1), {0, 1, 3, 3, 7, 12});
  expect_values(x.cumprod(0), {0, 1, 2, 0, 4, 10});
  EXPECT_EQ(anvil::cumsum(anvil::ones({3}, anvil::kInt32), 0).dtype(), anvil::kLong);
  expect_values(anvil::logcumsumexp(anvil::zeros({2}), 0), {0, std::log(2.0)});
  auto [sorted, order] = x.sort(-1, true);
  expect_values(sorted, {2, 1, 0, 5, 4, 3});
  EXPECT_EQ(ints(order), (Ints{2, 1, 0, 2, 1, 0}));
  EXPECT_EQ(ints(x.argsort(0, true)), (Ints{1, 1, 1, 0, 0, 0}));
  auto [top, at] = x.topk(2);
  expect_values(top, {2, 1, 5, 4});
  EXPECT_EQ(ints(at), (Ints{2, 1, 2, 1}));
  EXPECT_EQ(std::get<1>(anvil::topk(x, 1, 0, /*largest=*/false)).dtype(), anvil::kLong);
  EXPECT_FALSE(x.all().item<bool>());
  EXPECT_TRUE(x.any().item<bool>());
  EXPECT_EQ(ints(x.all(1)), (Ints{0, 1}));
  EXPECT_EQ(ints(x.any(0)), (Ints{1, 1, 1}));
  expect_values(x.logsumexp(1),
                {std::log(1 + std::exp(1.0) + std::exp(2.0)), std::log(std::exp(3.0) + std::exp(4.0) + std::exp(5.0))});
  EXPECT_TRUE(anvil::testing::gradcheck([](const std::vector<Tensor>& in) { return in[0].cumprod(1); },
                                        {anvil::randn({2, 4}, anvil::kDouble)}));
  EXPECT_TRUE(anvil::testing::gradcheck([](const std::vector<Tensor>& in) { return std::get<0>(in[0].topk(2)); },
                                        {anvil::randn({2, 4}, anvil::kDouble)}));
  expect_error_naming([&] { x.topk(4); }, {"topk", "k = 4", "size 3"});
}

TEST(LibtorchHabits, TrianglesSpacedValuesAndSamplers) {
  const Tensor m = anvil::ones({3, 3});
  expect_values(m.tril(), {1, 0, 0, 1, 1, 0, 1, 1, 1});
  expect_values(anvil::triu(m, 1), {0, 1, 1, 0, 0, 1, 0, 0, 0});
  expect_values(anvil::linspace(0, 1, 5), {0, 0.25, 0.5, 0.75, 1});
  expect_values(anvil::logspace(0, 2, 3), {1, 10, 100});
  anvil::manual_seed(0);
  const Tensor perm = anvil::randperm(6);
  EXPECT_EQ(perm.dtype(), anvil::kLong);
  EXPECT_EQ(ints(std::get<0>(perm.sort())), (Ints{0, 1, 2, 3, 4, 5}));
  const Tensor probs = anvil::tensor({0.0, 0.2, 0.8});
  const Tensor draws = anvil::multinomial(probs, 2);  // without replacement, as torch's default
  EXPECT_EQ(draws.sizes(), (anvil::Shape{2}));
  EXPECT_NE(ints(draws)[0], ints(draws)[1]);
  EXPECT_EQ(ints(anvil::eq(anvil::multinomial(probs, 5, /*replacement=*/true), 0)), (Ints{0, 0, 0, 0, 0}));
  expect_values(anvil::bernoulli(anvil::tensor({0.0, 1.0})), {0, 1});
  EXPECT_EQ(anvil::bernoulli(anvil::zeros({4}), 0.5).sizes(), (anvil::Shape{4}));
}

TEST(LibtorchHabits, DtypeAndDeviceNames) {
  EXPECT_EQ(anvil::kFloat, anvil::kFloat32);
  EXPECT_EQ(anvil::kDouble, anvil::kFloat64);
  EXPECT_EQ(anvil::kHalf, anvil::kFloat16);
  EXPECT_EQ(anvil::kLong, anvil::kInt64);
  EXPECT_EQ(anvil::kInt, anvil::kInt32);
  EXPECT_EQ(anvil::kByte, anvil::kUInt8);
  EXPECT_EQ(anvil::kBool, anvil::DType::Bool);
  EXPECT_EQ(anvil::Device(anvil::kCUDA, 1), anvil::Device::cuda(1));
  EXPECT_EQ(anvil::Device(anvil::kCPU), anvil::Device::cpu());
  const Tensor x = anvil::zeros({2, 3}, anvil::kCPU);
  EXPECT_TRUE(x.to(anvil::kCPU).is_cpu());
  EXPECT_EQ(x.to(anvil::kDouble).scalar_type(), anvil::kDouble);
  const Tensor y = anvil::ones({2}, anvil::TensorOptions().dtype(anvil::kDouble).device(anvil::kCPU));
  EXPECT_EQ(y.scalar_type(), anvil::kDouble);
  const Tensor z = anvil::ones({2}, anvil::dtype(anvil::kDouble).requires_grad(true));
  EXPECT_TRUE(z.requires_grad());
  EXPECT_EQ(anvil::ones({1}, anvil::requires_grad()).requires_grad(), true);
}

TEST(LibtorchHabits, FunctionalNamespace) {
  namespace F = anvil::nn::functional;
  const Tensor x = anvil::tensor({-1.0, 0.5});
  expect_values(F::relu(x), {0, 0.5});
  EXPECT_NEAR(values(F::gelu(x))[1], 0.5 * 0.5 * (1 + std::erf(0.5 / std::sqrt(2.0))), 1e-6);
  EXPECT_NEAR(values(F::softmax(x, 0).sum())[0], 1.0, 1e-6);
  const Tensor logits = anvil::zeros({2, 4}), target = anvil::tensor({1, 3}).to(anvil::kLong);
  EXPECT_NEAR(F::cross_entropy(logits, target).item<double>(), std::log(4.0), 1e-6);
  EXPECT_EQ(F::linear(anvil::ones({1, 3}), anvil::ones({2, 3})).sizes(), (anvil::Shape{1, 2}));
  // The forms that take their settings as options.
  expect_values(F::softmax(anvil::zeros({2}), F::SoftmaxFuncOptions(0)), {0.5, 0.5});
  EXPECT_NEAR(values(F::log_softmax(anvil::zeros({2}), F::LogSoftmaxFuncOptions(0)))[0], std::log(0.5), 1e-6);
  expect_values(F::dropout(x, F::DropoutFuncOptions().p(0.5).training(false)), {-1, 0.5});
  expect_values(F::layer_norm(anvil::tensor({1.0, 3.0}), F::LayerNormFuncOptions({2}).eps(0)), {-1, 1});
  const auto per_target = F::CrossEntropyFuncOptions().ignore_index(1).reduction(anvil::Reduction::None);
  expect_values(F::cross_entropy(logits, target, per_target), {0, std::log(4.0)});  // target 1 ignored
}

// ---- torch::linalg: solve, inv, det, slogdet, svd and the norms ----

TEST(LibtorchHabits, LinalgAsTorchLinalg) {
  // [[2, 1], [1, 3]] x = [3, 5] has x = [0.8, 1.4]; det 5.
  const Tensor A = anvil::tensor({2.0, 1.0, 1.0, 3.0}).view({2, 2});
  const Tensor b = anvil::tensor({3.0, 5.0});
  expect_values(anvil::linalg::solve(A, b), {0.8, 1.4});
  expect_values(anvil::linalg::solve(A, b.view({2, 1}), /*left=*/true), {0.8, 1.4});
  expect_values(anvil::linalg::inv(A), {0.6, -0.2, -0.2, 0.4});
  EXPECT_NEAR(anvil::linalg::det(A).item<double>(), 5.0, 1e-5);
  auto [sign, logabsdet] = anvil::linalg::slogdet(A);
  EXPECT_EQ(sign.item<double>(), 1.0);
  EXPECT_NEAR(logabsdet.item<double>(), std::log(5.0), 1e-5);
  const Tensor x = x23();  // [[0, 1, 2], [3, 4, 5]]
  EXPECT_NEAR(anvil::linalg::vector_norm(x, 2, {1}, false)[1].item<double>(), std::sqrt(50.0), 1e-5);
  EXPECT_NEAR(anvil::linalg::vector_norm(x, INFINITY).item<double>(), 5.0, 0);
  EXPECT_NEAR(anvil::linalg::norm(x).item<double>(), std::sqrt(55.0), 1e-5);
  EXPECT_NEAR(anvil::linalg::norm(x, "fro").item<double>(), std::sqrt(55.0), 1e-5);
  EXPECT_NEAR(anvil::linalg::norm(x, 1).item<double>(), 7.0, 0);  // max column sum of |x|
  EXPECT_NEAR(anvil::linalg::matrix_norm(x, INFINITY).item<double>(), 12.0, 0);  // max row sum
  EXPECT_NEAR(values(x.norm(2, 1))[1], std::sqrt(50.0), 1e-5);  // the method, as x.norm(p, dim)
  // A is symmetric positive definite: its singular values are its eigenvalues (5 +- sqrt 5) / 2.
  EXPECT_NEAR(anvil::linalg::matrix_norm(A, 2, {-2, -1}, false, {}).item<double>(), (5 + std::sqrt(5.0)) / 2, 1e-5);
  EXPECT_NEAR(anvil::linalg::matrix_norm(A, "nuc").item<double>(), 5.0, 1e-5);  // the trace
  expect_values(anvil::linalg::svdvals(A, {}), {(5 + std::sqrt(5.0)) / 2, (5 - std::sqrt(5.0)) / 2});
  auto [U, S, Vh] = anvil::linalg::svd(A, /*full_matrices=*/false, {});
  expect_values(anvil::matmul(U * S.unsqueeze(0), Vh), {2, 1, 1, 3});
  expect_error_naming([&] { anvil::linalg::solve(x, b); }, {"linalg.solve", "square"});
  expect_error_naming([] { anvil::linalg::inv(anvil::zeros({2, 2})); }, {"linalg.inv", "singular"});
}

// ---- 3. functional ops a libtorch user reaches for ----

TEST(LibtorchHabits, EinsumAsTorchEinsum) {
  const Tensor a = x23(), b = anvil::arange(6, anvil::kFloat).view({3, 2});
  expect_values(anvil::einsum("ij,jk->ik", {a, b}), values(anvil::matmul(a, b)));
  expect_values(anvil::einsum("ii->", {anvil::arange(9, anvil::kFloat).view({3, 3})}), {12});  // trace
  expect_values(anvil::einsum("ij->", {a}), {15});
  EXPECT_EQ(anvil::einsum("bij,bjk->bik", {a.unsqueeze(0), b.unsqueeze(0)}).sizes(), (anvil::Shape{1, 2, 2}));
  EXPECT_EQ(anvil::einsum("...ij,jk", {a.expand({4, 2, 3}), b}).sizes(), (anvil::Shape{4, 2, 2}));
  expect_error_naming([&] { anvil::einsum("ij,jk->ik", {a, a}); }, {"einsum", "sizes must match"});
}

TEST(LibtorchHabits, PadAndInterpolateWithFuncOptions) {
  namespace F = anvil::nn::functional;
  const Tensor r = anvil::arange(4, anvil::kFloat).view({1, 1, 4});
  expect_values(F::pad(r, F::PadFuncOptions({2, 1}).mode(anvil::kReflect)), {2, 1, 0, 1, 2, 3, 2});
  expect_values(F::pad(r, F::PadFuncOptions({1, 1}).mode(anvil::kReplicate)), {0, 0, 1, 2, 3, 3});
  expect_values(F::pad(r, F::PadFuncOptions({1, 0}).value(-1)), {-1, 0, 1, 2, 3});
  const Tensor img = anvil::arange(4, anvil::kFloat).view({1, 1, 2, 2});
  const Tensor up = F::interpolate(
      img, F::InterpolateFuncOptions().size(std::vector<int64_t>({3, 3})).mode(anvil::kBilinear).align_corners(true));
  expect_values(up, {0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3});
  EXPECT_EQ(
      F::interpolate(img, F::InterpolateFuncOptions().scale_factor(std::vector<double>({2})).mode(anvil::kNearest))
          .sizes(),
      (anvil::Shape{1, 1, 4, 4}));
  expect_error_naming([&] { F::pad(r, F::PadFuncOptions({4, 0}).mode(anvil::kReflect)); }, {"pad", "reflect"});
}

TEST(LibtorchHabits, ConvPoolAndNormVariants) {
  namespace F = anvil::nn::functional;
  anvil::manual_seed(3);
  const Tensor seq = anvil::randn({2, 4, 10});
  auto conv = std::make_shared<anvil::nn::Conv1d>(anvil::nn::Conv1dOptions(4, 8, 3).stride(1).padding(1));
  EXPECT_EQ(conv->forward(seq).sizes(), (anvil::Shape{2, 8, 10}));
  auto deconv = std::make_shared<anvil::nn::ConvTranspose2d>(
      anvil::nn::ConvTranspose2dOptions(8, 4, 3).stride(2).padding(1).output_padding(1));
  EXPECT_EQ(deconv->forward(anvil::randn({1, 8, 5, 5})).sizes(), (anvil::Shape{1, 4, 10, 10}));
  EXPECT_EQ(F::max_pool1d(seq, F::MaxPool1dFuncOptions(3).stride(2).ceil_mode(true)).sizes(), (anvil::Shape{2, 4, 5}));
  EXPECT_EQ(F::adaptive_max_pool2d(anvil::randn({1, 2, 7, 7}), F::AdaptiveMaxPool2dFuncOptions(3)).sizes(),
            (anvil::Shape{1, 2, 3, 3}));
  auto gn = std::make_shared<anvil::nn::GroupNorm>(anvil::nn::GroupNormOptions(2, 4));
  const Tensor g = gn->forward(seq);
  EXPECT_NEAR(anvil::amax(g.view({2, 2, -1}).mean(-1).abs()).item<double>(), 0, 1e-5);
  auto rms = std::make_shared<anvil::nn::RMSNorm>(anvil::nn::RMSNormOptions({10}).eps(1e-6));
  const Tensor normed = rms->forward(seq);
  EXPECT_NEAR((normed * normed).mean(-1).mean().item<double>(), 1.0, 1e-4);
  const Tensor inorm = F::instance_norm(seq, F::InstanceNormFuncOptions());
  EXPECT_NEAR(anvil::amax(inorm.mean(-1).abs()).item<double>(), 0, 1e-5);
  auto emb = std::make_shared<anvil::nn::Embedding>(anvil::nn::EmbeddingOptions(10, 3).padding_idx(0));
  EXPECT_EQ(emb->weight[0].abs().sum().item<double>(), 0);
  expect_values(anvil::one_hot(anvil::tensor({2, 0}).to(anvil::kLong), 3), {0, 0, 1, 1, 0, 0});
}

TEST(LibtorchHabits, LossesAndDistancesWithFuncOptions) {
  namespace F = anvil::nn::functional;
  const Tensor a = anvil::tensor({0.0, 2.0}), b = anvil::tensor({0.5, 0.0});
  expect_values(F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions().beta(1.0).reduction(anvil::kNone)), {0.125, 1.5});
  expect_values(F::huber_loss(a, b, F::HuberLossFuncOptions().delta(0.5).reduction(anvil::kSum)), {0.125 + 0.875});
  const Tensor logp = anvil::log(anvil::tensor({0.5, 0.5})).unsqueeze(0), q = anvil::tensor({0.25, 0.75}).unsqueeze(0);
  const double kl = 0.25 * std::log(0.5) + 0.75 * std::log(1.5);
  EXPECT_NEAR(F::kl_div(logp, q, F::KLDivFuncOptions().reduction(anvil::kBatchMean)).item<double>(), kl, 1e-6);
  EXPECT_NEAR(
      F::kl_div(logp, anvil::log(q), F::KLDivFuncOptions().reduction(anvil::kSum).log_target(true)).item<double>(), kl,
      1e-6);
  const Tensor u = anvil::tensor({1.0, 0.0}).unsqueeze(0), v = anvil::tensor({1.0, 1.0}).unsqueeze(0);
  expect_values(F::cosine_similarity(u, v, F::CosineSimilarityFuncOptions().dim(1)), {1 / std::sqrt(2.0)});
  EXPECT_NEAR(F::pairwise_distance(u, v, F::PairwiseDistanceFuncOptions().p(2).eps(0)).item<double>(), 1.0, 1e-6);
  expect_error_naming([&] { F::kl_div(a, q); }, {"kl_div", "same shape"});
}

TEST(LibtorchHabits, FunctionalOpsGradientsMatchFiniteDifferences) {
  using anvil::testing::gradcheck;
  anvil::manual_seed(4);
  auto r = [](const anvil::Shape& s) { return anvil::randn(s, anvil::kDouble); };
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return anvil::einsum("bij,bjk->bik", t); },
                        {r({2, 2, 3}), r({2, 3, 2})}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& t) {
        return anvil::pad(t[0], {1, 2}, anvil::kReflect);
      },
      {r({2, 4})}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return anvil::group_norm(t[0], 2); }, {r({2, 4, 3})}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& t) { return anvil::huber_loss(t[0], t[1]); }, {r({3, 2}), r({3, 2})}));
}

// ---- 5. the audit's gaps: options, in-place logic, activations, pools ----

TEST(LibtorchHabits, Conv2dFuncOptionsHoldTheBias) {
  namespace F = anvil::nn::functional;
  anvil::manual_seed(5);
  const Tensor x = anvil::randn({1, 2, 5, 5}), w = anvil::randn({3, 2, 3, 3}), b = anvil::randn({3});
  const Tensor y = F::conv2d(x, w, F::Conv2dFuncOptions().stride(1).padding(1));
  EXPECT_EQ(y.sizes(), (anvil::Shape{1, 3, 5, 5}));
  const Tensor with_bias = F::conv2d(x, w, F::Conv2dFuncOptions().stride(2).padding(1).bias(b));
  EXPECT_EQ(with_bias.sizes(), (anvil::Shape{1, 3, 3, 3}));
  // The bias adds b[c] to every position of channel c.
  const Tensor without = F::conv2d(x, w, F::Conv2dFuncOptions().stride(2).padding(1));
  expect_values((with_bias - without).mean({0, 2, 3}), values(b));
  expect_values(y, values(anvil::conv2d(x, w, {}, {.padding = {1, 1}})));  // anvil's form, unchanged
  const Tensor seq = anvil::randn({2, 4, 9}), w1 = anvil::randn({6, 4, 3});
  EXPECT_EQ(F::conv1d(seq, w1, F::Conv1dFuncOptions().stride(2).padding(1)).sizes(), (anvil::Shape{2, 6, 5}));
  const Tensor wt = anvil::randn({3, 2, 3, 3});
  EXPECT_EQ(F::conv_transpose2d(anvil::randn({1, 3, 4, 4}), wt,
                                F::ConvTranspose2dFuncOptions().stride(2).padding(1).output_padding(1))
                .sizes(),
            (anvil::Shape{1, 2, 8, 8}));
  expect_error_naming([&] { F::conv2d(x, w, b, F::Conv2dFuncOptions().bias(b)); }, {"conv2d", "bias", "both"});
}

TEST(LibtorchHabits, PoolFuncOptions) {
  namespace F = anvil::nn::functional;
  const Tensor img = anvil::arange(16, anvil::kFloat).view({1, 1, 4, 4});
  expect_values(F::max_pool2d(img, F::MaxPool2dFuncOptions(2).stride(2)), {5, 7, 13, 15});
  expect_values(F::avg_pool2d(img, F::AvgPool2dFuncOptions(2)), {2.5, 4.5, 10.5, 12.5});
  EXPECT_EQ(F::max_pool2d(img, F::MaxPool2dFuncOptions(3).stride(2).padding(1)).sizes(), (anvil::Shape{1, 1, 2, 2}));
  // A (height, width) pair as the only argument is a Size2: a bare {1, 4}
  // there would initialise kernel_size and stride (aggregate rules).
  expect_values(F::avg_pool2d(img, F::AvgPool2dFuncOptions(anvil::nn::Size2(1, 4)).count_include_pad(false)),
                {1.5, 5.5, 9.5, 13.5});
  EXPECT_EQ(F::avg_pool2d(img, F::AvgPool2dFuncOptions(2).stride({2, 1}).padding({0, 1})).sizes(),
            (anvil::Shape{1, 1, 2, 5}));
  const Tensor seq = anvil::arange(6, anvil::kFloat).view({1, 1, 6});
  expect_values(F::avg_pool1d(seq, F::AvgPool1dFuncOptions(2)), {0.5, 2.5, 4.5});
  expect_values(anvil::avg_pool1d(seq, {.kernel = 3, .stride = 3}), {1, 4});
  expect_error_naming([&] { F::max_pool2d(img, F::MaxPool2dFuncOptions(2).dilation(2)); },
                      {"max_pool2d", "dilation (2, 2)"});
  expect_error_naming([&] { F::avg_pool1d(seq, F::AvgPool1dFuncOptions(7)); }, {"avg_pool1d", "kernel_size 7"});
}

TEST(LibtorchHabits, ActivationFuncOptionsAndModules) {
  namespace F = anvil::nn::functional;
  const Tensor x = anvil::tensor({-2.0, -0.5, 0.5, 3.0});
  expect_values(F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.2)), {-0.4, -0.1, 0.5, 3.0});
  expect_values(F::elu(x, F::ELUFuncOptions().alpha(0.5)), {0.5 * std::expm1(-2.0), 0.5 * std::expm1(-0.5), 0.5, 3});
  expect_values(F::softplus(x, F::SoftplusFuncOptions().beta(2).threshold(5)),
                {std::log1p(std::exp(-4.0)) / 2, std::log1p(std::exp(-1.0)) / 2, std::log1p(std::exp(1.0)) / 2,
                 3.0});  // beta * x = 6 > threshold: x itself
  expect_values(F::mish(x), values(x * anvil::tanh(anvil::softplus(x))));
  expect_values(F::hardswish(x), {-2.0 * 1 / 6, -0.5 * 2.5 / 6, 0.5 * 3.5 / 6, 3});
  expect_values(F::leaky_relu(x), values(anvil::leaky_relu(x, 0.01)));
  Tensor y = x.clone();
  const Tensor r = F::leaky_relu(y, F::LeakyReLUFuncOptions().negative_slope(0.5).inplace(true));
  expect_values(y, {-1, -0.25, 0.5, 3});  // written into y
  EXPECT_EQ(r.data_ptr<float>(), y.data_ptr<float>());
  // In place inside a graph: the gradient is the out-of-place op's.
  const Tensor leaf = anvil::randn({6}, anvil::kDouble).requires_grad_(true);
  Tensor hidden = leaf * 2;
  F::elu(hidden, F::ELUFuncOptions().alpha(0.5).inplace(true)).sum().backward();
  const Tensor want_grad = anvil::where(leaf.detach() > 0, 2.0, anvil::exp(leaf.detach() * 2) * 0.5 * 2);
  expect_values(leaf.grad(), values(want_grad));
  expect_error_naming([&] { F::leaky_relu(leaf, F::LeakyReLUFuncOptions().inplace(true)); }, {"leaf"});

  auto model = std::make_shared<anvil::nn::Sequential>();
  model->push_back(std::make_shared<anvil::nn::LeakyReLU>(anvil::nn::LeakyReLUOptions().negative_slope(0.2)));
  model->push_back(std::make_shared<anvil::nn::ELU>(anvil::nn::ELUOptions().alpha(1.0)));
  model->push_back(std::make_shared<anvil::nn::Softplus>(anvil::nn::SoftplusOptions().beta(1).threshold(20)));
  model->push_back(std::make_shared<anvil::nn::Mish>());
  model->push_back(std::make_shared<anvil::nn::Hardswish>());
  const Tensor want = anvil::hardswish(anvil::mish(anvil::softplus(anvil::elu(anvil::leaky_relu(x, 0.2)))));
  expect_values(model->forward(x), values(want));
  std::ostringstream tree;
  tree << *model;
  EXPECT_EQ(tree.str(),
            "Sequential(\n"
            "  (0): LeakyReLU(negative_slope=0.2)\n"
            "  (1): ELU(alpha=1)\n"
            "  (2): Softplus(beta=1, threshold=20)\n"
            "  (3): Mish()\n"
            "  (4): Hardswish()\n"
            ")");
  EXPECT_TRUE(anvil::testing::gradcheck(
      [](const std::vector<Tensor>& in) { return F::elu(in[0], F::ELUFuncOptions().alpha(0.7)); },
      {anvil::randn({5}, anvil::kDouble)}));
}

TEST(LibtorchHabits, InPlaceBitwiseOperatorsAndLogicMethods) {
  Tensor a = anvil::tensor({12, 10, 0}).to(anvil::kInt);
  const Tensor b = anvil::tensor({10, 6, 5}).to(anvil::kInt);
  const void* storage = a.data_ptr<int32_t>();
  a &= b;
  EXPECT_EQ(ints(a), (Ints{8, 2, 0}));
  a |= 5;
  EXPECT_EQ(ints(a), (Ints{13, 7, 5}));
  a ^= b;
  EXPECT_EQ(ints(a), (Ints{7, 1, 0}));
  EXPECT_EQ(a.data_ptr<int32_t>(), storage);  // in place, dtype kept
  EXPECT_EQ(a.scalar_type(), anvil::kInt);

  Tensor mask = anvil::tensor({1, 1, 0, 0}).to(anvil::kBool);
  const Tensor other = anvil::tensor({1, 0, 1, 0}).to(anvil::kBool);
  mask |= other;
  EXPECT_EQ(ints(mask), (Ints{1, 1, 1, 0}));
  mask &= other;
  EXPECT_EQ(ints(mask), (Ints{1, 0, 1, 0}));
  mask ^= true;
  EXPECT_EQ(ints(mask), (Ints{0, 1, 0, 1}));
  EXPECT_EQ(mask.scalar_type(), anvil::kBool);
  Tensor rows = anvil::ones({2, 3}, anvil::kLong);
  rows &= anvil::tensor({1, 0, 1}).to(anvil::kLong);  // broadcast into self
  EXPECT_EQ(ints(rows), (Ints{1, 0, 1, 1, 0, 1}));

  EXPECT_EQ(ints(b.bitwise_not()), (Ints{-11, -7, -6}));
  EXPECT_EQ(ints(other.logical_not()), (Ints{0, 1, 0, 1}));
  EXPECT_EQ(ints(b.logical_not()), (Ints{0, 0, 0}));
  EXPECT_EQ(b.logical_not().scalar_type(), anvil::kBool);
  EXPECT_EQ(ints(other.logical_and(mask)), (Ints{0, 0, 0, 0}));
  EXPECT_EQ(ints(other.logical_or(mask)), (Ints{1, 1, 1, 1}));

  Tensor f = x23();
  expect_error_naming([&] { f &= anvil::ones({2, 3}, anvil::kLong); }, {"bitwise_and_", "float32", "int64"});
  Tensor flag = anvil::ones({3}, anvil::kBool);
  expect_error_naming(
      [&] {
        flag |= anvil::tensor({1, 2, 3}).to(anvil::kLong);
      },
      {"bitwise_or_", "int64", "can't be cast", "bool"});
  Tensor small = anvil::ones({3}, anvil::kInt);
  expect_error_naming([&] { small ^= anvil::ones({2, 3}, anvil::kInt); }, {"bitwise_xor_", "[2, 3]", "[3]"});
  expect_error_naming([&] { (void)f.bitwise_not(); }, {"bitwise_not", "float32"});
}

TEST(LibtorchHabits, DataLoaderOptionsChainAsTorchData) {
  const anvil::data::DataLoaderOptions chained = anvil::data::DataLoaderOptions().batch_size(64).workers(2);
  EXPECT_EQ(chained.batch_size, 64);
  EXPECT_EQ(chained.num_workers, 2);
  EXPECT_EQ(chained.workers(), 2);
  const auto more = anvil::data::DataLoaderOptions(4).drop_last(true).shuffle(true).seed(3);
  EXPECT_EQ(more.batch_size(), 4);
  EXPECT_TRUE(more.drop_last);
  const anvil::nn::data::DataLoaderOptions aggregate{.batch_size = 3, .num_workers = 1};  // anvil's form
  EXPECT_EQ(aggregate.batch_size, 3);
  auto dataset = std::make_shared<anvil::data::TensorDataset>(anvil::arange(10, anvil::kFloat).view({10, 1}),
                                                              anvil::arange(10, anvil::kLong));
  anvil::data::DataLoader loader(dataset,
                                 anvil::data::DataLoaderOptions().batch_size(4).workers(2).drop_last(true).transform(
                                     [](anvil::data::Example e, uint64_t) {
                                       e.data = e.data * 2;
                                       return e;
                                     }));
  std::vector<double> seen;
  for (const anvil::data::Example& batch : loader)
    for (double v : values(batch.data)) seen.push_back(v);
  EXPECT_EQ(seen, (Doubles{0, 2, 4, 6, 8, 10, 12, 14}));  // two batches of 4, the last 2 dropped, transformed
  EXPECT_EQ(loader.num_batches(), 2);
  expect_error_naming([&] { anvil::data::DataLoader(dataset, anvil::data::DataLoaderOptions().batch_size(0)); },
                      {"DataLoader", "batch_size", "0"});
}

TEST(LibtorchHabits, IsnanRmsNormAndReductionNames) {
  namespace F = anvil::nn::functional;
  const Tensor x = anvil::tensor({1.0, NAN, 3.0});
  EXPECT_EQ(ints(x.isnan()), (Ints{0, 1, 0}));
  EXPECT_EQ(ints(anvil::isnan(x)), (Ints{0, 1, 0}));
  EXPECT_EQ(x.isnan().scalar_type(), anvil::kBool);
  const Tensor v = anvil::tensor({3.0, 4.0}).view({1, 2});
  const double rms = std::sqrt((9.0 + 16.0) / 2);
  expect_values(F::rms_norm(v, F::RMSNormFuncOptions({2}).eps(0)), {3 / rms, 4 / rms});
  expect_values(anvil::rms_norm(v, {2}, anvil::tensor({2.0, 1.0}), 0.0), {6 / rms, 4 / rms});
  const Tensor a = anvil::tensor({0.0, 2.0}), b = anvil::tensor({1.0, 0.0});
  EXPECT_NEAR(F::mse_loss(a, b, anvil::kMean).item<double>(), 2.5, 1e-6);  // torch::kMean, as libtorch spells it
  EXPECT_NEAR(F::mse_loss(a, b, anvil::kSum).item<double>(), 5.0, 1e-6);
  EXPECT_NEAR(F::smooth_l1_loss(a, b, F::SmoothL1LossFuncOptions().reduction(anvil::kMean)).item<double>(), 1.0, 1e-6);
  EXPECT_NEAR(F::mse_loss(a, b, F::MSELossFuncOptions(anvil::kSum)).item<double>(), 5.0, 1e-6);
  expect_values(F::l1_loss(a, b, F::L1LossFuncOptions().reduction(anvil::kNone)), {1, 2});
}

// torch::linalg's functions take every argument, the dtype last.
TEST(LibtorchHabits, LinalgNormsWithEveryArgument) {
  const Tensor m = anvil::tensor({3.0, 4.0, 0.0, 0.0}).view({2, 2});
  expect_values(anvil::linalg::vector_norm(m, 2, {1}, false, {}), {5, 0});
  const Tensor n = anvil::linalg::vector_norm(m, 1, {0}, true, anvil::kDouble);
  EXPECT_EQ(n.scalar_type(), anvil::kDouble);
  EXPECT_EQ(n.sizes(), (anvil::Shape{1, 2}));
  EXPECT_NEAR(anvil::linalg::matrix_norm(m, "fro", {-2, -1}, false, {}).item<double>(), 5.0, 1e-6);
  EXPECT_NEAR(anvil::linalg::matrix_norm(m, 1, {-2, -1}, false, {}).item<double>(), 4.0, 1e-6);
  EXPECT_NEAR(anvil::linalg::norm(m, std::nullopt, {}, false, anvil::kDouble).item<double>(), 5.0, 1e-12);
  expect_error_naming([&] { anvil::linalg::vector_norm(m, 2, {2}, false, {}); }, {"linalg.vector_norm", "dim 2"});
}

}  // namespace
