// CPU unary/binary/where kernels against formulas written here, on contiguous,
// transposed and broadcast (stride 0) views, in several dtypes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/shapes/matmul_checks.h"
#include "core/dispatch.h"
#include "tests/kernels/cpu/nn_kernel_test_util.h"

namespace anvil::test {
namespace {

using shapes::transposed;

// v broadcast to `shape` (same rank): size-1 dims get stride 0.
View expanded(View v, const Shape& shape) {
  for (size_t d = 0; d < shape.size(); ++d)
    if (v.shape[d] == 1 && shape[d] != 1) v.strides[d] = 0;
  v.shape = shape;
  return v;
}

TestTensor<uint8_t> bool_tensor(const Shape& shape) {
  TestTensor<uint8_t> t = filled_tensor<uint8_t>(shape, 2.0);  // 2: neither true nor false
  t.view.dtype = kBool;
  return t;
}

double gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
double gelu_erf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double silu(double x) { return x * sigmoid(x); }
double softplus(double x) { return x > 20 ? x : std::log1p(std::exp(x)); }  // beta 1, threshold 20

struct UnaryCase {
  UnaryOp op;
  double lo, hi;  // input range
  double (*ref)(double);
};

const UnaryCase kFloatUnary[] = {
    {UnaryOp::Neg, -3, 3, [](double x) { return -x; }},
    {UnaryOp::Abs, -3, 3, [](double x) { return std::fabs(x); }},
    {UnaryOp::Exp, -5, 5, [](double x) { return std::exp(x); }},
    {UnaryOp::Log, 0.01, 10, [](double x) { return std::log(x); }},
    {UnaryOp::Sqrt, 0, 10, [](double x) { return std::sqrt(x); }},
    {UnaryOp::Rsqrt, 0.1, 10, [](double x) { return 1 / std::sqrt(x); }},
    {UnaryOp::Sin, -4, 4, [](double x) { return std::sin(x); }},
    {UnaryOp::Cos, -4, 4, [](double x) { return std::cos(x); }},
    {UnaryOp::Tanh, -4, 4, [](double x) { return std::tanh(x); }},
    {UnaryOp::Sigmoid, -8, 8, sigmoid},
    {UnaryOp::Relu, -3, 3, [](double x) { return x > 0 ? x : 0.0; }},
    {UnaryOp::GeluTanh, -4, 4, gelu_tanh},
    {UnaryOp::GeluErf, -4, 4, gelu_erf},
    {UnaryOp::Silu, -6, 6, silu},
    {UnaryOp::Sign, -3, 3, [](double x) { return x > 0   ? 1.0
                                                 : x < 0 ? -1.0
                                                         : 0.0; }},
    {UnaryOp::Reciprocal, 0.2, 5, [](double x) { return 1 / x; }},
    {UnaryOp::Square, -3, 3, [](double x) { return x * x; }},
    {UnaryOp::Clamp, -3, 3, [](double x) { return std::min(std::max(x, -0.5), 1.25); }},
};

template <typename T> void check_unary_ops(double rtol, double atol, bool transposed_input) {
  std::mt19937 rng(10);
  for (const UnaryCase& c : kFloatUnary) {
    auto in = random_tensor<T>({7, 9}, rng, c.lo, c.hi);
    const View in_view = transposed_input ? transposed(in.view) : in.view;
    auto out = filled_tensor<T>(in_view.shape);
    kernel_for<kernel::Unary>(DeviceType::CPU)(c.op, out.view, in_view, UnaryParams{-0.5, 1.25});
    std::vector<double> expected;
    for (double x : values(in_view)) expected.push_back(c.ref(x));
    expect_close(values(out.view), expected, atol, rtol, "unary op " + std::to_string(static_cast<int>(c.op)));
  }
}

TEST(CpuElementwise, UnaryFloat32) { check_unary_ops<float>(2e-6, 1e-6, false); }
TEST(CpuElementwise, UnaryFloat64) { check_unary_ops<double>(1e-14, 1e-15, false); }
TEST(CpuElementwise, UnaryFloat32Transposed) { check_unary_ops<float>(2e-6, 1e-6, true); }
TEST(CpuElementwise, UnaryFloat16AndBFloat16) {
  check_unary_ops<Half>(2e-3, 1e-3, false);
  check_unary_ops<BFloat16>(1.6e-2, 1e-2, true);
}

TEST(CpuElementwise, UnaryIntegers) {
  auto in = tensor_of<int32_t>({6}, {-5, -1, 0, 1, 4, 100});
  auto out = filled_tensor<int32_t>({6}, 0.0);
  auto run = [&](UnaryOp op, UnaryParams p = {}) {
    kernel_for<kernel::Unary>(DeviceType::CPU)(op, out.view, in.view, p);
    return out.storage;
  };
  EXPECT_EQ(run(UnaryOp::Neg), (std::vector<int32_t>{5, 1, 0, -1, -4, -100}));
  EXPECT_EQ(run(UnaryOp::Abs), (std::vector<int32_t>{5, 1, 0, 1, 4, 100}));
  EXPECT_EQ(run(UnaryOp::Sign), (std::vector<int32_t>{-1, -1, 0, 1, 1, 1}));
  EXPECT_EQ(run(UnaryOp::Square), (std::vector<int32_t>{25, 1, 0, 1, 16, 10000}));
  EXPECT_EQ(run(UnaryOp::Relu), (std::vector<int32_t>{0, 0, 0, 1, 4, 100}));
  EXPECT_EQ(run(UnaryOp::Clamp, {-2, 3}), (std::vector<int32_t>{-2, -1, 0, 1, 3, 3}));
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(run(UnaryOp::Clamp, {0, inf}), (std::vector<int32_t>{0, 0, 0, 1, 4, 100}));

  auto bools = bool_tensor({6});
  kernel_for<kernel::Unary>(DeviceType::CPU)(UnaryOp::LogicalNot, bools.view, in.view, {});
  EXPECT_EQ(bools.storage, (std::vector<uint8_t>{0, 0, 1, 0, 0, 0}));
}

TEST(CpuElementwise, NanPropagatesThroughReluClampMaxMin) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto in = tensor_of<float>({3}, {nan, -1, 2});
  auto out = filled_tensor<float>({3}, 0.0);
  kernel_for<kernel::Unary>(DeviceType::CPU)(UnaryOp::Relu, out.view, in.view, {});
  EXPECT_TRUE(std::isnan(out.storage[0]));
  kernel_for<kernel::Unary>(DeviceType::CPU)(UnaryOp::Clamp, out.view, in.view, {0, 1});
  EXPECT_TRUE(std::isnan(out.storage[0]));
  EXPECT_EQ(out.storage[1], 0.0f);
  EXPECT_EQ(out.storage[2], 1.0f);

  auto other = tensor_of<float>({3}, {0, nan, 1});
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Maximum, out.view, in.view, other.view);
  EXPECT_TRUE(std::isnan(out.storage[0]));
  EXPECT_TRUE(std::isnan(out.storage[1]));
  EXPECT_EQ(out.storage[2], 2.0f);
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Minimum, out.view, other.view, in.view);
  EXPECT_TRUE(std::isnan(out.storage[0]));
  EXPECT_TRUE(std::isnan(out.storage[1]));
  EXPECT_EQ(out.storage[2], 1.0f);
}

TEST(CpuElementwise, UnsupportedDtypeNamesOpAndDtype) {
  auto in = tensor_of<int32_t>({2}, {1, 2});
  auto out = filled_tensor<int32_t>({2}, 0.0);
  std::string msg =
      error_message([&] { kernel_for<kernel::Unary>(DeviceType::CPU)(UnaryOp::Exp, out.view, in.view, {}); });
  EXPECT_NE(msg.find("exp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;

  auto b = bool_tensor({2});
  msg = error_message([&] { kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Sub, b.view, b.view, b.view); });
  EXPECT_NE(msg.find("sub"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;

  auto f = filled_tensor<float>({2}, 1.0);
  msg = error_message([&] { kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Add, f.view, f.view, in.view); });
  EXPECT_NE(msg.find("add"), std::string::npos) << msg;
}

struct BinaryCase {
  BinaryOp op;
  double (*ref)(double, double);
};

const BinaryCase kArithmetic[] = {
    {BinaryOp::Add, [](double a, double b) { return a + b; }},
    {BinaryOp::Sub, [](double a, double b) { return a - b; }},
    {BinaryOp::Mul, [](double a, double b) { return a * b; }},
    {BinaryOp::Div, [](double a, double b) { return a / b; }},
    {BinaryOp::Pow, [](double a, double b) { return std::pow(std::fabs(a), b); }},
    {BinaryOp::Maximum, [](double a, double b) { return std::max(a, b); }},
    {BinaryOp::Minimum, [](double a, double b) { return std::min(a, b); }},
};

// out[i, j] = op(a[i, j], b[.., ..]) with b broadcast along rows, columns or both.
template <typename T> void check_binary_broadcasts(double rtol) {
  std::mt19937 rng(11);
  const Shape shape = {13, 37};
  for (const BinaryCase& c : kArithmetic) {
    const bool positive = c.op == BinaryOp::Pow;
    auto a = random_tensor<T>(shape, rng, positive ? 0.1 : -2, 2);
    for (const Shape& b_shape : {Shape{13, 37}, Shape{1, 37}, Shape{13, 1}, Shape{1, 1}}) {
      auto b = random_tensor<T>(b_shape, rng, 0.5, 2);
      const View bv = expanded(b.view, shape);
      for (bool swap : {false, true}) {
        const View& x = swap ? bv : a.view;
        const View& y = swap ? a.view : bv;
        if (swap && positive) continue;
        auto out = filled_tensor<T>(shape);
        kernel_for<kernel::Binary>(DeviceType::CPU)(c.op, out.view, x, y);
        std::vector<double> xs = values(x), ys = values(y), expected;
        for (size_t i = 0; i < xs.size(); ++i) expected.push_back(c.ref(xs[i], ys[i]));
        expect_close(values(out.view), expected, 1e-6, rtol,
                     "binary op " + std::to_string(static_cast<int>(c.op)) + (swap ? " (swapped)" : ""));
      }
    }
  }
}

TEST(CpuElementwise, BinaryBroadcastFloat32) { check_binary_broadcasts<float>(2e-6); }
TEST(CpuElementwise, BinaryBroadcastFloat64) { check_binary_broadcasts<double>(1e-14); }
TEST(CpuElementwise, BinaryBroadcastFloat16) { check_binary_broadcasts<Half>(2e-3); }

// float32 add, sub, mul and div are one correctly rounded operation on every
// path (the vector kernels on contiguous, broadcast and strided runs longer
// than their 256-element chunks; the scalar loops): each result equals the
// float64 operation rounded to float (exact, as double has over 2 x 24 + 2 bits).
TEST(CpuElementwise, Float32ArithmeticIsCorrectlyRoundedOnEveryLayout) {
  std::mt19937 rng(14);
  const Shape shape = {7, 601};
  for (int k = 0; k < 4; ++k) {
    const BinaryCase& c = kArithmetic[k];
    auto a = random_tensor<float>(shape, rng, -3, 3);
    for (const Shape& b_shape : {Shape{7, 601}, Shape{1, 601}, Shape{7, 1}, Shape{1, 1}}) {
      auto b = random_tensor<float>(b_shape, rng, 0.25, 4);
      const View bv = expanded(b.view, shape);
      for (bool transposed_out : {false, true}) {
        auto out = filled_tensor<float>(transposed_out ? Shape{601, 7} : shape);
        const View out_view = transposed_out ? transposed(out.view) : out.view;
        kernel_for<kernel::Binary>(DeviceType::CPU)(c.op, out_view, a.view, bv);
        const std::vector<double> xs = values(a.view), ys = values(bv), got = values(out_view);
        int reported = 0;
        for (size_t i = 0; i < xs.size(); ++i)
          if (static_cast<float>(got[i]) != static_cast<float>(c.ref(xs[i], ys[i])) && reported++ < 3)
            ADD_FAILURE() << ops::binary_info(c.op).name << " b " << b_shape[0] << "x" << b_shape[1]
                          << (transposed_out ? " (transposed out)" : "") << ": element " << i << " is " << got[i]
                          << ", expected " << static_cast<float>(c.ref(xs[i], ys[i]));
      }
    }
  }
}

TEST(CpuElementwise, BinaryTransposedInputsAndOutput) {
  std::mt19937 rng(12);
  auto a = random_tensor<float>({6, 5}, rng);
  auto b = random_tensor<float>({5, 6}, rng);
  auto out = filled_tensor<float>({6, 5});
  const View out_t = transposed(out.view);  // write through a transposed view
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Mul, out_t, transposed(a.view), b.view);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 6; ++j)
      EXPECT_FLOAT_EQ(static_cast<float>(at(out.view, {j, i})),
                      static_cast<float>(at(a.view, {j, i}) * at(b.view, {i, j})));
}

TEST(CpuElementwise, LargeBroadcastUsesThreadsCorrectly) {
  std::mt19937 rng(13);
  const Shape shape = {8, 129, 300};  // 309600 elements: several threads, runs split mid-row
  auto a = random_tensor<float>(shape, rng);
  auto bias = random_tensor<float>({1, 1, 300}, rng);
  auto scale = random_tensor<float>({8, 129, 1}, rng);
  auto sum = filled_tensor<float>(shape);
  auto prod = filled_tensor<float>(shape);
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Add, sum.view, a.view, expanded(bias.view, shape));
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Mul, prod.view, a.view, expanded(scale.view, shape));
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 129; ++j)
      for (int64_t k = 0; k < 300; ++k) {
        const size_t n = static_cast<size_t>((i * 129 + j) * 300 + k);
        ASSERT_EQ(sum.storage[n], a.storage[n] + bias.storage[k]);
        ASSERT_EQ(prod.storage[n], a.storage[n] * scale.storage[i * 129 + j]);
      }
}

// Fused gradients against central differences of the forward formulas, in float64.
TEST(CpuElementwise, BackwardOpsMatchFiniteDifferences) {
  std::mt19937 rng(14);
  struct Case {
    BinaryOp op;
    double (*f)(double);
    bool takes_output;  // b is y = f(x) instead of x
    double lo = -3, hi = 3;  // x's range: inside f's domain
  };
  const Case cases[] = {
      {BinaryOp::ReluBackward, [](double x) { return x > 0 ? x : 0.0; }, false},
      {BinaryOp::GeluTanhBackward, gelu_tanh, false},
      {BinaryOp::GeluErfBackward, gelu_erf, false},
      {BinaryOp::SiluBackward, silu, false},
      {BinaryOp::SoftplusBackward, softplus, false},
      {BinaryOp::SigmoidBackward, sigmoid, true},
      {BinaryOp::TanhBackward, [](double x) { return std::tanh(x); }, true},
      {BinaryOp::ErfBackward, [](double x) { return std::erf(x); }, false},
      {BinaryOp::Expm1Backward, [](double x) { return std::expm1(x); }, true},
      {BinaryOp::Log1pBackward, [](double x) { return std::log1p(x); }, false, -0.9, 3},
  };
  for (const Case& c : cases) {
    auto g = random_tensor<double>({4, 11}, rng);
    auto x = random_tensor<double>({4, 11}, rng, c.lo, c.hi);
    auto saved = filled_tensor<double>({4, 11});
    for (size_t i = 0; i < x.storage.size(); ++i) saved.storage[i] = c.takes_output ? c.f(x.storage[i]) : x.storage[i];
    auto out = filled_tensor<double>({4, 11});
    kernel_for<kernel::Binary>(DeviceType::CPU)(c.op, out.view, g.view, saved.view);
    std::vector<double> expected;
    const double h = 1e-6;
    for (size_t i = 0; i < x.storage.size(); ++i) {
      const double xi = x.storage[i];
      expected.push_back(g.storage[i] * (c.f(xi + h) - c.f(xi - h)) / (2 * h));
    }
    expect_close(values(out.view), expected, 1e-7, 1e-6, "backward op " + std::to_string(static_cast<int>(c.op)));
  }
}

TEST(CpuElementwise, ComparisonsWriteBool) {
  auto a = tensor_of<int64_t>({2, 3}, {1, 5, 3, -2, 0, 7});
  auto b = tensor_of<int64_t>({1, 3}, {1, 2, 3});
  const View bv = expanded(b.view, {2, 3});
  auto out = bool_tensor({2, 3});
  auto run = [&](BinaryOp op) {
    kernel_for<kernel::Binary>(DeviceType::CPU)(op, out.view, a.view, bv);
    return out.storage;
  };
  EXPECT_EQ(run(BinaryOp::Eq), (std::vector<uint8_t>{1, 0, 1, 0, 0, 0}));
  EXPECT_EQ(run(BinaryOp::Ne), (std::vector<uint8_t>{0, 1, 0, 1, 1, 1}));
  EXPECT_EQ(run(BinaryOp::Lt), (std::vector<uint8_t>{0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(run(BinaryOp::Le), (std::vector<uint8_t>{1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(run(BinaryOp::Gt), (std::vector<uint8_t>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(run(BinaryOp::Ge), (std::vector<uint8_t>{1, 1, 1, 0, 0, 1}));
  EXPECT_EQ(run(BinaryOp::LogicalAnd), (std::vector<uint8_t>{1, 1, 1, 1, 0, 1}));

  auto fa = tensor_of<float>({4}, {0, 0.5, 0, -1});
  auto fb = tensor_of<float>({4}, {0, 0, 2, 3});
  auto fo = bool_tensor({4});
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::LogicalOr, fo.view, fa.view, fb.view);
  EXPECT_EQ(fo.storage, (std::vector<uint8_t>{0, 1, 1, 1}));
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::LogicalAnd, fo.view, fa.view, fb.view);
  EXPECT_EQ(fo.storage, (std::vector<uint8_t>{0, 0, 0, 1}));
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Lt, fo.view, fa.view, fb.view);
  EXPECT_EQ(fo.storage, (std::vector<uint8_t>{0, 0, 1, 1}));

  // A comparison must write bool.
  auto wrong = filled_tensor<float>({4}, 0.0);
  const std::string msg =
      error_message([&] { kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Eq, wrong.view, fa.view, fb.view); });
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
}

TEST(CpuElementwise, IntegerArithmeticAndTrueDivision) {
  auto a = tensor_of<int32_t>({4}, {7, -7, 9, 1});
  auto b = tensor_of<int32_t>({4}, {2, 2, -3, 0});
  auto out = filled_tensor<int32_t>({4}, 0.0);
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Add, out.view, a.view, b.view);
  EXPECT_EQ(out.storage, (std::vector<int32_t>{9, -5, 6, 1}));
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Mul, out.view, a.view, b.view);
  EXPECT_EQ(out.storage, (std::vector<int32_t>{14, -14, -27, 0}));
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Maximum, out.view, a.view, b.view);
  EXPECT_EQ(out.storage, (std::vector<int32_t>{7, 2, 9, 1}));

  auto q = filled_tensor<float>({4}, 0.0);
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Div, q.view, a.view, b.view);
  EXPECT_EQ(q.storage[0], 3.5f);
  EXPECT_EQ(q.storage[1], -3.5f);
  EXPECT_EQ(q.storage[2], -3.0f);
  EXPECT_TRUE(std::isinf(q.storage[3]));

  // Integer division into an integer output would silently truncate: refused.
  const std::string msg =
      error_message([&] { kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Div, out.view, a.view, b.view); });
  EXPECT_NE(msg.find("div"), std::string::npos) << msg;
}

TEST(CpuElementwise, BoolAddIsOrAndMulIsAnd) {
  auto a = bool_tensor({4});
  auto b = bool_tensor({4});
  a.storage = {0, 0, 1, 1};
  b.storage = {0, 1, 0, 1};
  auto out = bool_tensor({4});
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Add, out.view, a.view, b.view);
  EXPECT_EQ(out.storage, (std::vector<uint8_t>{0, 1, 1, 1}));
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Mul, out.view, a.view, b.view);
  EXPECT_EQ(out.storage, (std::vector<uint8_t>{0, 0, 0, 1}));
  kernel_for<kernel::Unary>(DeviceType::CPU)(UnaryOp::LogicalNot, out.view, a.view, {});
  EXPECT_EQ(out.storage, (std::vector<uint8_t>{1, 1, 0, 0}));
}

TEST(CpuElementwise, WhereWithBroadcastCondition) {
  std::mt19937 rng(15);
  auto cond = bool_tensor({1, 5});
  cond.storage = {1, 0, 0, 1, 1};
  auto a = random_tensor<double>({4, 5}, rng);
  auto b = random_tensor<double>({4, 1}, rng);
  auto out = filled_tensor<double>({4, 5});
  kernel_for<kernel::Where>(DeviceType::CPU)(out.view, expanded(cond.view, {4, 5}), a.view, expanded(b.view, {4, 5}));
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 5; ++j)
      EXPECT_EQ(at(out.view, {i, j}), cond.storage[j] ? at(a.view, {i, j}) : at(b.view, {i, 0}));

  auto ia = tensor_of<int64_t>({3}, {1, 2, 3});
  auto ib = tensor_of<int64_t>({3}, {-1, -2, -3});
  auto ic = bool_tensor({3});
  ic.storage = {0, 1, 0};
  auto io = filled_tensor<int64_t>({3}, 0.0);
  kernel_for<kernel::Where>(DeviceType::CPU)(io.view, ic.view, ia.view, ib.view);
  EXPECT_EQ(io.storage, (std::vector<int64_t>{-1, 2, -3}));
}

TEST(CpuElementwise, InPlaceAndEmpty) {
  std::mt19937 rng(16);
  auto a = random_tensor<float>({1000}, rng);
  const std::vector<float> before = a.storage;
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Add, a.view, a.view, a.view);
  for (size_t i = 0; i < before.size(); ++i) ASSERT_EQ(a.storage[i], 2 * before[i]);

  std::vector<float> none;
  const View empty{none.data(), kFloat32, {0, 3}, {3, 1}};
  kernel_for<kernel::Unary>(DeviceType::CPU)(UnaryOp::Exp, empty, empty, {});
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::Mul, empty, empty, empty);
}

}  // namespace
}  // namespace anvil::test
