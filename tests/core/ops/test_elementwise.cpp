// Elementwise ops: values against std:: math, broadcasting, promotion,
// gradients against finite differences, in-place variants, bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "core/ops.h"
#include "tests/core/gradcheck.h"

namespace anvil {
namespace {

using testing::gradcheck;
using testing::max_abs_diff;

struct UnaryCase {
  const char* name;
  Tensor (*op)(const Tensor&);
  double (*reference)(double);
  double lo, hi;  // input range where the op is defined
};

double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double ref_relu(double x) { return x > 0 ? x : 0; }
double ref_gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double ref_gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
double ref_silu(double x) { return x * ref_sigmoid(x); }
Tensor gelu_erf(const Tensor& x) { return gelu(x); }
Tensor gelu_tanh(const Tensor& x) { return gelu(x, GeluApprox::Tanh); }

const UnaryCase kUnary[] = {
    {"neg", neg, [](double x) { return -x; }, -3, 3},
    {"abs", abs, [](double x) { return std::abs(x); }, -3, 3},
    {"exp", exp, [](double x) { return std::exp(x); }, -3, 3},
    {"log", log, [](double x) { return std::log(x); }, 0.1, 5},
    {"sqrt", sqrt, [](double x) { return std::sqrt(x); }, 0.1, 5},
    {"rsqrt", rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.1, 5},
    {"sin", sin, [](double x) { return std::sin(x); }, -3, 3},
    {"cos", cos, [](double x) { return std::cos(x); }, -3, 3},
    {"tanh", tanh, [](double x) { return std::tanh(x); }, -3, 3},
    {"sigmoid", sigmoid, ref_sigmoid, -5, 5},
    {"relu", relu, ref_relu, -3, 3},
    {"gelu", gelu_erf, ref_gelu, -3, 3},
    {"gelu_tanh", gelu_tanh, ref_gelu_tanh, -3, 3},
    {"silu", silu, ref_silu, -3, 3},
    {"reciprocal", reciprocal, [](double x) { return 1 / x; }, 0.2, 3},
    {"square", square, [](double x) { return x * x; }, -3, 3},
};

Tensor uniform(const Shape& shape, double lo, double hi, DType dt = kFloat64) {
  return rand(shape, dt) * (hi - lo) + lo;
}

TEST(Elementwise, UnaryValuesMatchStdMath) {
  for (const auto& c : kUnary) {
    for (DType dt : {kFloat64, kFloat32}) {
      Tensor x = uniform({7, 13}, c.lo, c.hi, dt);
      auto in = x.to_vector<double>();
      auto out = c.op(x).to_vector<double>();
      double tol = dt == kFloat64 ? 1e-12 : 1e-5;
      for (size_t i = 0; i < in.size(); ++i)
        ASSERT_NEAR(out[i], c.reference(in[i]), tol * (1 + std::abs(c.reference(in[i])))) << c.name << " at " << in[i];
    }
  }
}

TEST(Elementwise, UnaryOnNonContiguousInput) {
  Tensor x = uniform({6, 5}, 0.1, 2).t();  // [5, 6], strides (1, 5)
  auto in = x.contiguous().to_vector<double>();
  auto out = sqrt(x).to_vector<double>();
  for (size_t i = 0; i < in.size(); ++i) ASSERT_NEAR(out[i], std::sqrt(in[i]), 1e-12);
}

TEST(Elementwise, UnaryGradients) {
  for (const auto& c : kUnary) {
    // Keep relu/abs inputs away from their kink, where finite differences lie.
    Tensor x = uniform({3, 4}, c.lo, c.hi);
    if (std::string(c.name) == "relu" || std::string(c.name) == "abs") x = x + sign(x) * 0.1;
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return c.op(in[0]); }, {x})) << c.name;
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return c.op(in[0].t()); }, {x}))
        << c.name << " (transposed)";
  }
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return clamp(in[0], -0.5, 0.7); },
                        {from_vector(std::vector<double>{-1, -0.3, 0.1, 0.6, 0.9})}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return pow(in[0], 3); }, {uniform({5}, -2, 2)}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return pow(in[0], 2.5); }, {uniform({5}, 0.5, 2)}));
}

TEST(Elementwise, BinaryValuesWithBroadcasting) {
  Tensor a = randn({4, 1, 3}, kFloat64), b = randn({5, 1}, kFloat64);
  Tensor s = a + b, d = a - b, m = a * b, q = a / (b.abs() + 0.5), mx = maximum(a, b), mn = minimum(a, b);
  EXPECT_EQ(s.shape(), (Shape{4, 5, 3}));
  auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  auto sv = s.to_vector<double>(), dv = d.to_vector<double>(), mv = m.to_vector<double>(), qv = q.to_vector<double>();
  auto mxv = mx.to_vector<double>(), mnv = mn.to_vector<double>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 3; ++k) {
        double x = av[i * 3 + k], y = bv[j];
        int o = (i * 5 + j) * 3 + k;
        EXPECT_DOUBLE_EQ(sv[o], x + y);
        EXPECT_DOUBLE_EQ(dv[o], x - y);
        EXPECT_DOUBLE_EQ(mv[o], x * y);
        EXPECT_NEAR(qv[o], x / (std::abs(y) + 0.5), 1e-14);
        EXPECT_EQ(mxv[o], std::max(x, y));
        EXPECT_EQ(mnv[o], std::min(x, y));
      }
}

TEST(Elementwise, BinaryGradientsWithBroadcastAndNonContiguous) {
  auto check = [](Tensor (*op)(const Tensor&, const Tensor&), const char* name) {
    EXPECT_TRUE(gradcheck([op](const std::vector<Tensor>& in) { return op(in[0], in[1]); },
                          {randn({3, 4}, kFloat64), uniform({4}, 0.5, 2)}))
        << name;
    EXPECT_TRUE(gradcheck([op](const std::vector<Tensor>& in) { return op(in[0].t(), in[1]); },
                          {randn({4, 3}, kFloat64), uniform({3, 1}, 0.5, 2)}))
        << name << " (transposed)";
  };
  check(add, "add");
  check(sub, "sub");
  check(mul, "mul");
  check(div, "div");
  check(maximum, "maximum");
  check(minimum, "minimum");
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return pow(in[0], in[1]); },
                        {uniform({2, 3}, 0.5, 2), uniform({3}, -1, 2)}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return where(gt(in[0], 0.0), in[0] * 2.0, in[1]); },
                        {randn({3, 4}, kFloat64), randn({4}, kFloat64)}));
}

TEST(Elementwise, TypePromotionFollowsPyTorch) {
  Tensor i = arange(4);  // int64
  EXPECT_EQ((i + 1).dtype(), kInt64);
  EXPECT_EQ((i + 0.5).dtype(), kFloat32);
  EXPECT_EQ((i / 2).dtype(), kFloat32);  // true division
  EXPECT_EQ((i / 2).to_vector<float>(), (std::vector<float>{0, 0.5f, 1, 1.5f}));
  EXPECT_EQ((ones({2}, kFloat16) * 2.5).dtype(), kFloat16);
  EXPECT_EQ((ones({2}, kFloat16) + ones({2}, kBFloat16)).dtype(), kFloat32);
  EXPECT_EQ((ones({2}, kFloat32) + ones({2}, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ((ones({2}, kInt32) + ones({2}, kUInt8)).dtype(), kInt32);
  EXPECT_EQ(exp(arange(3)).dtype(), kFloat32);
  EXPECT_EQ(abs(arange(3) - 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
}

TEST(Elementwise, FloatToIntegerCastsAreDefinedForEveryValue) {
  // core/base/float_to_int.h: saturate to int64 (NaN -> 0), then wrap.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> v{nan, inf, -inf, 1e30, -1e30, -1.0, 300.7, -2.7, 2.7};
  for (DType from : {kFloat64, kFloat32, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(from));
    const Tensor x = from_vector(v).to(from);
    // (1e30 is inf in float16, and 300.7 rounds to 300.75 or 300 in the 16-bit types.)
    EXPECT_EQ(x.to(kInt64).to_vector<int64_t>(),
              (std::vector<int64_t>{0, INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, -1, 300, -2, 2}));
    const std::vector<int64_t> i32 = x.to(kInt32).to(kInt64).to_vector<int64_t>();
    EXPECT_EQ(i32, (std::vector<int64_t>{0, -1, 0, -1, 0, -1, 300, -2, 2}));
    const std::vector<uint8_t> u8 = x.to(kUInt8).to_vector<uint8_t>();
    EXPECT_EQ(u8, (std::vector<uint8_t>{0, 255, 0, 255, 0, 255, 44, 254, 2}));
    EXPECT_EQ(x.to(kBool).to(kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1, 1, 1}));
  }
  // fill of an integer tensor with a special float value follows the same rule
  EXPECT_EQ(full({2}, nan, TensorOptions(kInt32)).to_vector<int32_t>(), (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(full({2}, -inf, TensorOptions(kInt64)).to_vector<int64_t>(), (std::vector<int64_t>{INT64_MIN, INT64_MIN}));
}

TEST(Elementwise, ComparisonsWhereMaskedFill) {
  Tensor x = from_vector(std::vector<float>{-1, 0, 2, 3});
  EXPECT_EQ(gt(x, 0.0).to(kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(le(x, 0.0).to(kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(eq(x, 2.0).to(kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 1, 0}));
  EXPECT_EQ(ne(x, x).to(kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(where(lt(x, 1.0), x * 10.0, x).to_vector<float>(), (std::vector<float>{-10, 0, 2, 3}));
  EXPECT_EQ(masked_fill(x, ge(x, 2.0), -5).to_vector<float>(), (std::vector<float>{-1, 0, -5, -5}));
  EXPECT_EQ(logical_not(gt(x, 0.0)).to(kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(logical_and(gt(x, -1.0), lt(x, 3.0)).to(kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(clamp(x, 0, 2).to_vector<float>(), (std::vector<float>{0, 0, 2, 2}));
}

TEST(Elementwise, InPlaceVariantsBumpVersionAndBroadcast) {
  Tensor x = ones({2, 3});
  uint64_t v0 = x.version();
  x.add_(from_vector(std::vector<float>{1, 2, 3}));
  x.mul_(2.0);
  x.sub_(ones({1, 3}));
  x.div_(from_vector(std::vector<float>{1, 2}, {2, 1}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{3, 5, 7, 1.5f, 2.5f, 3.5f}));
  EXPECT_GT(x.version(), v0);
  Tensor y = from_vector(std::vector<float>{-1, 1});
  y.relu_();
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 1}));
  masked_fill_(y, gt(y, 0.5), 9);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 9}));
  EXPECT_THROW(ones({3}).add_(ones({2, 3})), Error);  // result does not fit self
}

// The error must name the op and both dtypes, and leave self untouched.
void expect_narrowing_refused(const std::function<void(Tensor&)>& op, Tensor self, const char* name,
                              const char* result_dtype) {
  const std::vector<int64_t> before = self.to_vector<int64_t>();
  const uint64_t version = self.version();
  try {
    op(self);
    FAIL() << name << " on " << self.dtype() << " should refuse a " << result_dtype << " result";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(name), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("result type ") + result_dtype), std::string::npos) << m;
    EXPECT_NE(m.find(std::string("output type ") + dtype_name(self.dtype())), std::string::npos) << m;
  }
  EXPECT_EQ(self.to_vector<int64_t>(), before) << name;
  EXPECT_EQ(self.version(), version) << name;
}

TEST(Elementwise, InPlaceRefusesResultsThatSelfCannotHold) {
  Tensor a = randint(-50, 50, {3, 4});
  Tensor f = randn({3, 4});
  expect_narrowing_refused([&](Tensor& s) { s.add_(f); }, a, "add_", "float32");
  expect_narrowing_refused([&](Tensor& s) { s.sub_(f); }, a, "sub_", "float32");
  expect_narrowing_refused([&](Tensor& s) { s.mul_(f.to(kFloat64)); }, a, "mul_", "float64");
  expect_narrowing_refused([&](Tensor& s) { anvil::div_(s, f); }, a, "div_", "float32");
  expect_narrowing_refused([&](Tensor& s) { s += f.narrow(0, 0, 1); }, a, "add_", "float32");  // broadcast
  expect_narrowing_refused([](Tensor& s) { s.mul_(2.5); }, a, "mul_", "float32");
  expect_narrowing_refused([](Tensor& s) { anvil::add_(s, 0.5); }, a, "add_", "float32");
  // A 0-d floating tensor is of a higher category: it does promote.
  expect_narrowing_refused([](Tensor& s) { s.add_(scalar_tensor(1.0)); }, a, "add_", "float32");
  // True division of integers gives float32, even by an integer.
  expect_narrowing_refused([](Tensor& s) { s.div_(2); }, a, "div_", "float32");
  expect_narrowing_refused([&](Tensor& s) { s.div_(randint(1, 5, {4})); }, a, "div_", "float32");
  // Integers and floats cannot be stored in bool.
  Tensor b = gt(randn({5}), 0.0);
  expect_narrowing_refused([](Tensor& s) { s.add_(1); }, b, "add_", "int64");
  expect_narrowing_refused([](Tensor& s) { s.mul_(randint(0, 3, {5}, kInt32)); }, b, "mul_", "int32");
  expect_narrowing_refused([](Tensor& s) { s.mul_(ones({5})); }, b, "mul_", "float32");
  // Checked before any autograd recording: a float operand requiring grad.
  Tensor w = randn({4}).requires_grad_();
  expect_narrowing_refused([&](Tensor& s) { s.mul_(w); }, a, "mul_", "float32");
}

TEST(Elementwise, InPlaceKeepsSameKindAndWideningCasts) {
  Tensor f = randn({3, 4});
  Tensor i = randint(-9, 9, {3, 4});
  Tensor d = randn({3, 4}, kFloat64);
  auto expect_close = [](const Tensor& got, const Tensor& want, const char* what) {
    EXPECT_EQ(got.dtype(), kFloat32) << what;
    EXPECT_LT(max_abs_diff(got.to(kFloat64), want.to(kFloat64)), 1e-5) << what;
  };
  Tensor x = f.clone();
  x.add_(i);  // float32 += int64 tensor
  expect_close(x, f + i, "float32 += int64");
  x = f.clone();
  x.mul_(d);  // float64 result stored in float32: same kind
  expect_close(x, (f.to(kFloat64) * d).to(kFloat32), "float32 *= float64");
  x = f.clone();
  x.div_(i.abs() + 1);
  expect_close(x, f / (i.abs() + 1), "float32 /= int64");
  x = f.clone();
  x.mul_(2.5).add_(scalar_tensor(1.0, kFloat64));  // a float64 scalar does not widen the result
  expect_close(x, f * 2.5 + 1.0, "float32 scalar ops");

  Tensor n = randint(-9, 9, {3, 4}, kInt32);
  Tensor u = randint(0, 5, {4}, kUInt8);
  Tensor m = n.clone();
  m.add_(i).mul_(3).sub_(u);  // int64 results stored in int32: same kind
  EXPECT_EQ(m.dtype(), kInt32);
  EXPECT_EQ(m.to_vector<int64_t>(), ((n.to(kInt64) + i) * 3 - u.to(kInt64)).to_vector<int64_t>());

  Tensor p = gt(randn({5}), 0.0), q = gt(randn({5}), 0.0);
  Tensor both = p.clone();
  both.mul_(q);  // bool *= bool stays bool
  EXPECT_EQ(both.dtype(), kBool);
  EXPECT_EQ(both.to_vector<int64_t>(), logical_and(p, q).to_vector<int64_t>());

  Tensor h = randn({6}, kFloat16);
  Tensor k = randint(0, 4, {6});
  Tensor h2 = h.clone();
  h2.add_(k);  // float16 += int64
  EXPECT_EQ(h2.dtype(), kFloat16);
  EXPECT_LT(max_abs_diff(h2.to(kFloat32), (h.to(kFloat32) + k).to(kFloat16).to(kFloat32)), 1e-3);
}

TEST(Elementwise, CopyAndFillAlwaysCast) {
  // copy_ and the fills convert, as in PyTorch: truncation toward zero.
  Tensor a = zeros({4}, kInt64);
  a.copy_(from_vector(std::vector<float>{1.75f, -2.5f, 3.f, 0.5f}));
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3, 0}));
  a.fill_(2.75);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 2, 2}));
  masked_fill_(a, gt(from_vector(std::vector<float>{1, 0, 1, 0}), 0.5), 7.5);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{7, 2, 7, 2}));
}

TEST(Elementwise, Float16AndBFloat16ComputeInFloat) {
  Tensor x = uniform({100}, -2, 2, kFloat32);
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor h = x.to(dt);
    Tensor y = (h.exp() * h + 1.0).to(kFloat32);
    Tensor ref = (h.to(kFloat32).exp().to(dt).to(kFloat32) * h.to(kFloat32)).to(dt).to(kFloat32) + 1.0;
    EXPECT_LT(max_abs_diff(y, ref), dt == kFloat16 ? 0.02 : 0.2) << dt;
  }
}

TEST(Elementwise, BadInputGivesClearErrors) {
  try {
    add(ones({2, 3}), ones({4}));
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("add"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
    EXPECT_NE(m.find("[4]"), std::string::npos) << m;
  }
  EXPECT_THROW(where(ones({2}), ones({2}), ones({2})), Error);  // condition must be bool
  EXPECT_THROW(clamp(ones({2}), 2, 1), Error);
  EXPECT_THROW(mul(Tensor(), ones({2})), Error);
  EXPECT_THROW(masked_fill(ones({2}), gt(ones({3}), 0.0), 1), Error);
}

// Regressions from a review of core/: each test failed before its fix.
// In-place binary ops read `other` while writing self; when other overlaps
// self in another layout (a transpose, a broadcast row of self) the kernel
// read values it had already overwritten.
TEST(ElementwiseRegressions, InplaceAddWithTransposeOfSelf) {
  Tensor x = randn({3, 3}, kFloat64);
  Tensor expected = x + x.t();
  x.add_(x.t());
  EXPECT_LT(max_abs_diff(x, expected), 1e-12);
}

TEST(ElementwiseRegressions, InplaceMulWithBroadcastRowOfSelf) {
  Tensor x = randn({4, 5}, kFloat32);
  Tensor expected = x * x.select(0, 0);
  x.mul_(x.select(0, 0));
  EXPECT_LT(max_abs_diff(x, expected), 1e-6);
}

}  // namespace
}  // namespace anvil
