// The float32 vector kernels (kernels/cpu/vector_math.h) at the edges: the
// special values (inf, NaN, subnormals, |x| past every overflow), lengths
// that are not a multiple of any vector width, rows long enough to cross the
// float-accumulation blocks; against float64 references. Built without
// Highway these run the scalar paths and must pass all the same.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/vector_convert.h"
#include "core/dispatch.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/cpu_info.h"
#include "kernels/shapes/matmul_checks.h"
#include "tests/kernels/cpu/nn_kernel_test_util.h"

namespace anvil::test {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Special and large values, then random ones: n elements.
std::vector<double> edge_inputs(int64_t n, double lo, double hi, uint32_t seed) {
  std::vector<double> v = {0.0,     -0.0,   kInf,  -kInf, kNaN,   1.4e-45, -1.4e-45, 1e-40, -1e-40, 3.4e38,
                           -3.4e38, 1e30,   -1e30, 100.0, -100.0, 88.7,    -88.7,    89.0,  -89.0,  104.0,
                           -104.0,  20.0,   -20.0, 9.0,   -9.0,   5.0,     -5.0,     1e-7,  -1e-7,  0.5,
                           -0.5,    -0.999, -1.0,  -2.0,  1.0,    4.0,     -4.0,     3.9,   -3.9};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  while (static_cast<int64_t>(v.size()) < n) v.push_back(static_cast<float>(u(rng)));
  v.resize(static_cast<size_t>(n));
  for (double& x : v) x = static_cast<float>(x);
  return v;
}

// got (float) against the float64 reference: NaN where it is NaN, the same
// infinity where the float rounding of it is infinite, else within tolerance.
void expect_float_close(const std::vector<double>& got, const std::vector<double>& want, const std::vector<double>& in,
                        double atol, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want[i];
    const float wf = static_cast<float>(w);
    bool ok;
    if (std::isnan(w))
      ok = std::isnan(got[i]);
    else if (std::isinf(wf))
      ok = got[i] == wf;
    else
      ok = std::abs(got[i] - w) <= atol + rtol * std::abs(w);
    if (!ok && reported++ < 5)
      ADD_FAILURE() << what << ": x = " << in[i] << " gives " << got[i] << ", expected " << w << " (element " << i
                    << ")";
  }
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct UnaryEdgeCase {
  UnaryOp op;
  double (*ref)(double);
};

// The float64 formulas of the op table (kernels/ops/unary_ops.h), which the
// float64 kernels run.
const UnaryEdgeCase kVectorUnary[] = {
    {UnaryOp::Exp, [](double x) { return std::exp(x); }},
    {UnaryOp::Expm1, [](double x) { return std::expm1(x); }},
    {UnaryOp::Log, [](double x) { return std::log(x); }},
    {UnaryOp::Log1p, [](double x) { return std::log1p(x); }},
    {UnaryOp::Tanh, [](double x) { return std::tanh(x); }},
    {UnaryOp::Sigmoid, sigmoid},
    {UnaryOp::Erf, [](double x) { return std::erf(x); }},
    {UnaryOp::GeluErf, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
    {UnaryOp::GeluTanh,
     [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
    {UnaryOp::Silu, [](double x) { return x / (1 + std::exp(-x)); }},
    {UnaryOp::Softplus, [](double x) { return x > 20 ? x : std::log1p(std::exp(x)); }},
    {UnaryOp::Relu, [](double x) { return x < 0 ? 0.0 : x; }},  // NaN stays NaN
};

TEST(CpuVectorMath, UnaryOpsAtSpecialValuesAndOddLengths) {
  for (int64_t n : {1, 7, 67, 1000}) {
    for (const UnaryEdgeCase& c : kVectorUnary) {
      auto in = tensor_of<float>({n}, edge_inputs(n, -12, 12, 7));
      auto out = filled_tensor<float>({n});
      kernel_for<kernel::Unary>(DeviceType::CPU)(c.op, out.view, in.view, UnaryParams{});
      const std::vector<double> x = values(in.view);
      std::vector<double> want;
      for (double v : x) want.push_back(c.ref(v));
      // 1e-6 absolute: the GELU forms' 1 + erf / 1 + tanh cancel near x = -5
      // (a few ulp of 1, times x), as the scalar float formulas do.
      expect_float_close(values(out.view), want, x, 1e-6, 1e-6,
                         std::string(ops::unary_info(c.op).name) + " n=" + std::to_string(n));
    }
  }
}

// softplus at other parameters than the default (beta 1, threshold 20): the
// vector kernel has a path for beta 1 without the division and one for the
// rest; both against float64, on either side of the threshold.
TEST(CpuVectorMath, SoftplusAtOtherBetasAndThresholds) {
  for (const auto& [beta, threshold] : {std::pair{1.0, 20.0}, {1.0, 5.0}, {2.0, 5.0}, {0.5, 3.0}, {-1.5, 4.0}}) {
    auto in = tensor_of<float>({1000}, edge_inputs(1000, -12, 12, 7));
    auto out = filled_tensor<float>({1000});
    UnaryParams p;
    p.beta = beta, p.threshold = threshold;
    kernel_for<kernel::Unary>(DeviceType::CPU)(UnaryOp::Softplus, out.view, in.view, p);
    const std::vector<double> x = values(in.view);
    std::vector<double> want;
    for (double v : x) want.push_back(v * beta > threshold ? v : std::log1p(std::exp(v * beta)) / beta);
    expect_float_close(values(out.view), want, x, 1e-6, 1e-6,
                       "softplus beta " + std::to_string(beta) + " threshold " + std::to_string(threshold));
  }
}

// The ulp bounds kernels/cpu/README.md states, over points spread evenly
// across the float encodings of each range (so tiny, subnormal-producing
// and large arguments all get their share): the distance, in floats, from
// the float64 function rounded to float. sigmoid's bound holds where its
// result is a normal float (below about -87 e^-x overflows and it gives 0).
int64_t float_order(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : static_cast<int64_t>(i);
}
float float_at_order(int64_t k) {
  const int32_t i = k < 0 ? static_cast<int32_t>(static_cast<uint32_t>(-k) | 0x80000000u) : static_cast<int32_t>(k);
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}

TEST(CpuVectorMath, MathFunctionsWithinTheirUlpBounds) {
  struct Bound {
    UnaryOp op;
    double lo, hi;
    int64_t max_ulp;
    double (*ref)(double);
  };
  const Bound bounds[] = {
      {UnaryOp::Exp, -104, 89, 1, [](double x) { return std::exp(x); }},
      {UnaryOp::Expm1, -90, 89, 3, [](double x) { return std::expm1(x); }},
      {UnaryOp::Log, 1e-38, 3e38, 1, [](double x) { return std::log(x); }},
      {UnaryOp::Log1p, -0.9999999, 3e38, 2, [](double x) { return std::log1p(x); }},
      // AVX-512's own tanh (vector_math-inl.h) 2 ulp; Highway's on other targets 3.
      {UnaryOp::Tanh, -20, 20, cpu_capability().vector_math.rfind("AVX3", 0) == 0 ? 2 : 3,
       [](double x) { return std::tanh(x); }},
      {UnaryOp::Sigmoid, -100, 100, 2, sigmoid},
  };
  constexpr int64_t kPoints = 1 << 17;
  for (const Bound& b : bounds) {
    const int64_t first = float_order(static_cast<float>(b.lo)), last = float_order(static_cast<float>(b.hi));
    std::vector<double> xs;
    for (int64_t k = 0; k < kPoints; ++k) xs.push_back(float_at_order(first + (last - first) * k / (kPoints - 1)));
    auto in = tensor_of<float>({kPoints}, xs);
    auto out = filled_tensor<float>({kPoints});
    kernel_for<kernel::Unary>(DeviceType::CPU)(b.op, out.view, in.view, UnaryParams{});
    int64_t worst = 0;
    double worst_x = 0;
    for (int64_t k = 0; k < kPoints; ++k) {
      const float want = static_cast<float>(b.ref(xs[static_cast<size_t>(k)]));
      if (b.op == UnaryOp::Sigmoid && std::abs(want) < std::numeric_limits<float>::min()) continue;
      const int64_t ulp = std::llabs(float_order(out.storage[static_cast<size_t>(k)]) - float_order(want));
      if (ulp > worst) worst = ulp, worst_x = xs[static_cast<size_t>(k)];
    }
    EXPECT_LE(worst, b.max_ulp) << ops::unary_info(b.op).name << " is " << worst << " ulp off at x = " << worst_x;
  }
}

TEST(CpuVectorMath, UnaryOnStridedAndInPlaceViews) {
  std::mt19937 rng(3);
  auto in = random_tensor<float>({13, 11}, rng, -6, 6);
  const View t = shapes::transposed(in.view);
  auto out = filled_tensor<float>(t.shape);
  kernel_for<kernel::Unary>(DeviceType::CPU)(UnaryOp::GeluTanh, out.view, t, UnaryParams{});
  const std::vector<double> x = values(t);
  std::vector<double> want;
  for (double v : x) want.push_back(kVectorUnary[8].ref(v));
  expect_float_close(values(out.view), want, x, 1e-6, 1e-6, "gelu_tanh on a transposed view");
  const std::vector<double> before = values(in.view);
  kernel_for<kernel::Unary>(DeviceType::CPU)(UnaryOp::Exp, in.view, in.view, UnaryParams{});  // out == in
  std::vector<double> want_exp;
  for (double v : before) want_exp.push_back(std::exp(v));
  expect_float_close(values(in.view), want_exp, before, 0, 2e-7, "exp in place");
}

// Streamed outputs (vector_math.h, stream_output) at an output that is not
// vector-aligned: the same bits as plain stores give, and no store outside.
TEST(CpuVectorMath, StreamedMapsGiveTheSameBitsAtAnyAlignment) {
  if (!cpu::vec::enabled())
    GTEST_SKIP() << "built without Highway or ANVIL_CPU_VECTOR=off: the kernels use scalar loops";
  const int64_t n = 100'003;
  std::mt19937 rng(21);
  std::normal_distribution<float> normal;
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  for (float& v : a) v = normal(rng);
  for (float& v : b) v = normal(rng);
  constexpr float kSentinel = 12345.0f;
  const UnaryParams p{};
  for (int64_t offset : {0, 1, 3}) {
    std::vector<float> big(static_cast<size_t>(n + 4), kSentinel), pieces(static_cast<size_t>(n));
    float* out = big.data() + offset;
    ASSERT_TRUE(cpu::vec::unary(UnaryOp::Exp, p, out, a.data(), n, /*stream=*/true));
    for (int64_t i = 0; i < n; i += 1000)
      cpu::vec::unary(UnaryOp::Exp, p, pieces.data() + i, a.data() + i, std::min<int64_t>(1000, n - i));
    EXPECT_EQ(0, std::memcmp(out, pieces.data(), static_cast<size_t>(n) * sizeof(float))) << "exp, offset " << offset;
    for (int64_t i = 0; i < offset; ++i) EXPECT_EQ(big[static_cast<size_t>(i)], kSentinel);
    for (int64_t i = n + offset; i < n + 4; ++i) EXPECT_EQ(big[static_cast<size_t>(i)], kSentinel);

    ASSERT_TRUE(cpu::vec::binary(BinaryOp::Add, out, a.data(), b.data(), n, /*stream=*/true));
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) wrong += out[i] != a[static_cast<size_t>(i)] + b[static_cast<size_t>(i)];
    EXPECT_EQ(wrong, 0) << "add, offset " << offset;
  }
  // In place: out == in.
  std::vector<float> x = a;
  ASSERT_TRUE(cpu::vec::unary(UnaryOp::Relu, p, x.data(), x.data(), n, /*stream=*/true));
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) wrong += x[static_cast<size_t>(i)] != std::max(a[static_cast<size_t>(i)], 0.0f);
  EXPECT_EQ(wrong, 0) << "relu in place";
  // Shorter than the elements before out's first vector boundary.
  for (int64_t short_n : {1, 2, 5, 15}) {
    std::vector<float> plain(static_cast<size_t>(short_n)), big(static_cast<size_t>(short_n + 2), kSentinel);
    cpu::vec::unary(UnaryOp::Exp, p, plain.data(), a.data(), short_n, /*stream=*/false);
    cpu::vec::unary(UnaryOp::Exp, p, big.data() + 1, a.data(), short_n, /*stream=*/true);
    EXPECT_EQ(0, std::memcmp(big.data() + 1, plain.data(), plain.size() * sizeof(float))) << "n=" << short_n;
    EXPECT_EQ(big.front(), kSentinel);
    EXPECT_EQ(big.back(), kSentinel);
  }
}

// The fused gradients at the special values, against the float64 kernels.
TEST(CpuVectorMath, ActivationBackwardsMatchFloat64) {
  for (BinaryOp op :
       {BinaryOp::GeluTanhBackward, BinaryOp::GeluErfBackward, BinaryOp::SiluBackward, BinaryOp::SoftplusBackward,
        BinaryOp::ReluBackward, BinaryOp::TanhBackward, BinaryOp::SigmoidBackward, BinaryOp::ErfBackward,
        BinaryOp::Expm1Backward, BinaryOp::Log1pBackward}) {
    for (int64_t n : {5, 67, 515}) {
      const std::vector<double> xs = edge_inputs(n, -10, 10, 11);
      std::mt19937 rng(12);
      std::uniform_real_distribution<double> u(-2, 2);
      std::vector<double> gs;
      for (int64_t i = 0; i < n; ++i) gs.push_back(static_cast<float>(u(rng)));
      auto g = tensor_of<float>({n}, gs), x = tensor_of<float>({n}, xs);
      auto g64 = tensor_of<double>({n}, gs), x64 = tensor_of<double>({n}, xs);
      auto out = filled_tensor<float>({n});
      auto want = filled_tensor<double>({n});
      kernel_for<kernel::Binary>(DeviceType::CPU)(op, out.view, g.view, x.view);
      kernel_for<kernel::Binary>(DeviceType::CPU)(op, want.view, g64.view, x64.view);
      expect_float_close(values(out.view), values(want.view), xs, 2e-6, 2e-6,
                         std::string(ops::binary_info(op).name) + " n=" + std::to_string(n));
    }
  }
}

// tanh's and sigmoid's gradients from the output y are plain arithmetic:
// the vector kernels give the op table functors' bits exactly (no fused
// multiply-add), at every length and at the special values.
TEST(CpuVectorMath, GradientsFromTheOutputGiveTheScalarBits) {
  for (int64_t n : {1, 17, 67, 1000}) {
    const std::vector<double> ys = edge_inputs(n, -1.5, 1.5, 13), gs = edge_inputs(n, -3, 3, 14);
    auto g = tensor_of<float>({n}, gs), y = tensor_of<float>({n}, ys), out = filled_tensor<float>({n});
    for (BinaryOp op : {BinaryOp::TanhBackward, BinaryOp::SigmoidBackward}) {
      kernel_for<kernel::Binary>(DeviceType::CPU)(op, out.view, g.view, y.view);
      for (int64_t i = 0; i < n; ++i) {
        const float gf = g.storage[static_cast<size_t>(i)], yf = y.storage[static_cast<size_t>(i)];
        const float want =
            op == BinaryOp::TanhBackward ? ops::TanhBackward<float>{}(gf, yf) : ops::SigmoidBackward<float>{}(gf, yf);
        const float got = out.storage[static_cast<size_t>(i)];
        EXPECT_TRUE(std::memcmp(&got, &want, sizeof got) == 0 || (std::isnan(got) && std::isnan(want)))
            << ops::binary_info(op).name << " n=" << n << " g=" << gf << " y=" << yf << ": " << got << " vs " << want;
      }
    }
  }
}

// softplus's gradient is exactly g past its threshold (20), as the scalar
// functor's, and g * sigmoid(x) up to it, in vector lanes and the tail.
TEST(CpuVectorMath, SoftplusBackwardAtItsThreshold) {
  const std::vector<double> xs = {19.0, 19.999998, 20.0, 20.000002, 21.0, 30.0, 1e30, -30.0, 0.5,
                                  19.0, 20.0,      20.5, 25.0,      -1.0, 3.0,  20.0, 40.0};
  const int64_t n = static_cast<int64_t>(xs.size());
  std::vector<double> gs;
  for (int64_t i = 0; i < n; ++i) gs.push_back(0.25 * static_cast<double>(i + 1));
  auto g = tensor_of<float>({n}, gs), x = tensor_of<float>({n}, xs), out = filled_tensor<float>({n});
  kernel_for<kernel::Binary>(DeviceType::CPU)(BinaryOp::SoftplusBackward, out.view, g.view, x.view);
  for (int64_t i = 0; i < n; ++i) {
    const float xf = static_cast<float>(xs[static_cast<size_t>(i)]),
                gf = static_cast<float>(gs[static_cast<size_t>(i)]);
    if (xf > 20.0f) {
      EXPECT_EQ(out.storage[static_cast<size_t>(i)], gf) << "x=" << xf;
    } else {
      EXPECT_NEAR(out.storage[static_cast<size_t>(i)], gs[i] / (1 + std::exp(-static_cast<double>(xf))), 2e-6 * gs[i])
          << "x=" << xf;
    }
  }
}

// Rows of every length from 1 past two vector widths, and long ones crossing
// the float-accumulation blocks (8192), with one special value per row.
// 8, 16, 24, 32, 48 and 64: rows of whole vectors (AVX2, AVX-512), which softmax keeps in registers.
const int64_t kRowLengths[] = {1, 2, 3, 8, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 100, 1000, 8193, 20011};

std::vector<double> softmax_ref(const std::vector<double>& x, bool log) {
  double mx = -kInf;
  for (double v : x) mx = std::max(mx, v);
  double s = 0;
  for (double v : x) s += std::exp(v - mx);
  std::vector<double> y;
  for (double v : x) y.push_back(log ? v - mx - std::log(s) : std::exp(v - mx) / s);
  return y;
}

TEST(CpuVectorMath, SoftmaxRowsOfEveryLength) {
  std::mt19937 rng(5);
  for (int64_t n : kRowLengths) {
    for (bool log : {false, true}) {
      auto x = random_tensor<float>({3, n}, rng, -30, 30);
      auto y = filled_tensor<float>({3, n});
      x.storage[static_cast<size_t>(n) + n / 2] = -std::numeric_limits<float>::infinity();  // row 1: one -inf logit
      x.storage[2 * static_cast<size_t>(n)] = std::numeric_limits<float>::quiet_NaN();  // row 2: NaN
      kernel_for<kernel::Softmax>(DeviceType::CPU)(y.view, x.view, -1, log);
      for (int64_t r = 0; r < 3; ++r) {
        const std::vector<double> all = values(x.view);
        const std::vector<double> row(all.begin() + r * n, all.begin() + (r + 1) * n);
        const std::vector<double> got_all = values(y.view);
        const std::vector<double> got(got_all.begin() + r * n, got_all.begin() + (r + 1) * n);
        std::vector<double> want = softmax_ref(row, log);
        if (r == 1 && n == 1) continue;  // a row of only -inf: NaN, checked by the softmax tests
        expect_float_close(
            got, want, row, log ? 2e-5 : 1e-7, 1e-5,
            std::string(log ? "log_softmax" : "softmax") + " n=" + std::to_string(n) + " row " + std::to_string(r));
      }
      // backward: softmax gi = y (g - sum g y); log_softmax gi = g - exp(y) sum g
      auto g = random_tensor<float>({1, n}, rng, -1, 1);
      auto yr = filled_tensor<float>({1, n});
      View x0 = x.view;
      x0.shape = {1, n};
      kernel_for<kernel::Softmax>(DeviceType::CPU)(yr.view, x0, -1, log);
      auto gi = filled_tensor<float>({1, n});
      kernel_for<kernel::SoftmaxBackward>(DeviceType::CPU)(gi.view, g.view, yr.view, -1, log);
      const std::vector<double> gv = values(g.view), yv = values(yr.view);
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += log ? gv[i] : gv[i] * yv[i];
      std::vector<double> want;
      for (int64_t i = 0; i < n; ++i) want.push_back(log ? gv[i] - std::exp(yv[i]) * s : yv[i] * (gv[i] - s));
      expect_float_close(values(gi.view), want, gv, 1e-6, 1e-5, "softmax backward n=" + std::to_string(n));
    }
  }
}

// The attention kernels' row helpers: exp(x - shift) with its sum, and a
// bool mask's select, on rows of every length (the vector tails), in place.
TEST(CpuVectorMath, AttentionRowHelpersOfEveryLength) {
  if (!cpu::vec::enabled())
    GTEST_SKIP() << "built without Highway or ANVIL_CPU_VECTOR=off: the kernels use scalar loops";
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> u(-20, 5);
  for (int64_t n : kRowLengths) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = u(rng);
    x[0] = -std::numeric_limits<float>::infinity();  // a masked score: exp gives 0
    const float shift = 1.5f;
    std::vector<float> y = x;
    const double sum = cpu::vec::exp_shifted_row(y.data(), y.data(), n, shift);
    double want_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double arg = static_cast<double>(x[i]) - shift, want = std::exp(arg);
      want_sum += want;
      // x - shift rounds to float first (half an ulp of |arg|, as the scalar
      // loop's), then exp's own error.
      if (std::isinf(arg)) {
        EXPECT_EQ(y[i], 0.0f) << "exp_shifted_row of -inf, n=" << n;
      } else {
        EXPECT_NEAR(y[i], want, (3e-7 + 1.2e-7 * std::abs(arg)) * want) << "exp_shifted_row n=" << n << " i=" << i;
      }
    }
    EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum) << "exp_shifted_row sum n=" << n;

    std::vector<uint8_t> keep(static_cast<size_t>(n));
    for (uint8_t& k : keep) k = static_cast<uint8_t>(rng() % 2);
    std::vector<float> selected = x;
    cpu::vec::select_row(selected.data(), keep.data(), n, -7.0f);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(selected[i], keep[i] ? x[i] : -7.0f) << "select_row n=" << n << " i=" << i;
  }
}

TEST(CpuVectorMath, LayerNormAndRmsNormRowsOfEveryLength) {
  std::mt19937 rng(6);
  for (int64_t n : kRowLengths) {
    const int64_t rows = 2;
    auto x = random_tensor<float>({rows, n}, rng, -3, 3);
    for (float& v : x.storage) v += 1000.0f;  // a large mean: the two-pass variance keeps it exact
    auto w = random_tensor<float>({n}, rng, 0.5, 2);
    auto b = random_tensor<float>({n}, rng, -1, 1);
    auto y = filled_tensor<float>({rows, n});
    auto mean = filled_tensor<float>({rows}), rstd = filled_tensor<float>({rows});
    kernel_for<kernel::LayerNorm>(DeviceType::CPU)(y.view, mean.view, rstd.view, x.view, &w.view, &b.view, 1e-5);
    auto ry = filled_tensor<float>({rows, n});
    auto rr = filled_tensor<float>({rows});
    kernel_for<kernel::RmsNorm>(DeviceType::CPU)(ry.view, rr.view, x.view, &w.view, 1e-5);
    const std::vector<double> xv = values(x.view), wv = values(w.view), bv = values(b.view);
    std::vector<double> want_ln, want_rms;
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0, sq = 0, ss = 0;
      for (int64_t j = 0; j < n; ++j) m += xv[r * n + j], ss += xv[r * n + j] * xv[r * n + j];
      m /= n;
      for (int64_t j = 0; j < n; ++j) sq += (xv[r * n + j] - m) * (xv[r * n + j] - m);
      const double rs = 1 / std::sqrt(sq / n + 1e-5), rms = 1 / std::sqrt(ss / n + 1e-5);
      EXPECT_NEAR(mean.storage[r], m, 1e-6 * std::abs(m)) << n;
      EXPECT_NEAR(rstd.storage[r], rs, 1e-4 * rs) << n;
      for (int64_t j = 0; j < n; ++j) {
        want_ln.push_back((xv[r * n + j] - m) * rs * wv[j] + bv[j]);
        want_rms.push_back(xv[r * n + j] * rms * wv[j]);
      }
    }
    // x is stored in float around 1000: (x - mean) carries ~6e-5 of rounding.
    expect_float_close(values(y.view), want_ln, xv, 2e-3, 1e-4, "layer_norm n=" + std::to_string(n));
    expect_float_close(values(ry.view), want_rms, xv, 1e-6, 1e-5, "rms_norm n=" + std::to_string(n));

    // layer_norm backward (x's gradient) against the float64 kernel on the same values.
    auto g = random_tensor<float>({rows, n}, rng, -1, 1);
    auto gi = filled_tensor<float>({rows, n});
    kernel_for<kernel::LayerNormBackward>(DeviceType::CPU)(gi.view, nullptr, nullptr, g.view, x.view, mean.view,
                                                           rstd.view, &w.view);
    auto x64 = tensor_of<double>({rows, n}, xv), g64 = tensor_of<double>({rows, n}, values(g.view));
    auto w64 = tensor_of<double>({n}, wv);
    auto mean64 = tensor_of<double>({rows}, values(mean.view)), rstd64 = tensor_of<double>({rows}, values(rstd.view));
    auto gi64 = filled_tensor<double>({rows, n});
    kernel_for<kernel::LayerNormBackward>(DeviceType::CPU)(gi64.view, nullptr, nullptr, g64.view, x64.view, mean64.view,
                                                           rstd64.view, &w64.view);
    expect_float_close(values(gi.view), values(gi64.view), xv, 1e-3, 1e-3,
                       "layer_norm backward n=" + std::to_string(n));
    // A one-element row normalises to 0 whatever x is, so its gradient is exactly 0: g*w - mean(g*w)
    // must round the product the same way twice (an FMA that fused one of them left an ulp, times
    // rstd = 1/sqrt(eps), and disagreed with the CUDA kernel).
    if (n == 1)
      for (float v : gi.storage) {
        EXPECT_EQ(v, 0.0f) << "layer_norm backward of a one-element row";
      }
  }
}

// Rows up to 256 get their mean and variance in one pass of differences from
// x[0] (vector_rows.cpp, ShortRowMoments); a row whose x[0] lies far from
// its mean takes the two passes. Both kinds against float64, tight enough
// that the one pass's lost bits on the far row would fail; a NaN, an inf
// and a constant row as the scalar kernel has them.
TEST(CpuVectorMath, LayerNormShortRowsInOnePassOrTwo) {
  if (!cpu::vec::enabled())
    GTEST_SKIP() << "built without Highway or ANVIL_CPU_VECTOR=off: the kernels use scalar loops";
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (int64_t n : {64, 200, 256}) {
    const int64_t rows = 5;
    std::vector<float> x(static_cast<size_t>(rows * n));
    for (float& v : x) v = 1000.0f + normal(rng);
    x[static_cast<size_t>(n)] = 1300.0f;  // row 1: x[0] far from the mean
    x[static_cast<size_t>(2 * n + 7)] = NAN;  // row 2
    x[static_cast<size_t>(3 * n + 9)] = INFINITY;  // row 3
    std::fill_n(x.begin() + 4 * n, n, 3.5f);  // row 4: constant
    std::vector<float> y(x.size());
    std::vector<double> mean(static_cast<size_t>(rows)), rstd(mean.size());
    cpu::vec::layer_norm_rows(y.data(), x.data(), rows, n, nullptr, nullptr, 1e-5, mean.data(), rstd.data(), false);
    for (int64_t r : {0, 1}) {
      double m = 0, m2 = 0;
      for (int64_t j = 0; j < n; ++j) m += x[static_cast<size_t>(r * n + j)];
      m /= static_cast<double>(n);
      for (int64_t j = 0; j < n; ++j)
        m2 += (x[static_cast<size_t>(r * n + j)] - m) * (x[static_cast<size_t>(r * n + j)] - m);
      const double rs = 1 / std::sqrt(m2 / static_cast<double>(n) + 1e-5);
      EXPECT_NEAR(mean[static_cast<size_t>(r)], m, 1e-7 * m) << "n=" << n << " row " << r;
      EXPECT_NEAR(rstd[static_cast<size_t>(r)], rs, 1e-6 * rs) << "n=" << n << " row " << r;
    }
    EXPECT_TRUE(std::isnan(mean[2]) && std::isnan(y[static_cast<size_t>(2 * n)])) << "n=" << n << ": a NaN row";
    EXPECT_TRUE(std::isnan(y[static_cast<size_t>(3 * n)])) << "n=" << n << ": a row with inf";
    EXPECT_EQ(mean[4], 3.5) << "n=" << n;
    EXPECT_EQ(y[static_cast<size_t>(4 * n + 1)], 0.0f) << "n=" << n << ": a constant row normalises to 0";
  }
}

// The vector row kernels as one signature: `rows` contiguous rows of n
// floats from x (and g), the output to out; `first` is the index of x's
// first row in the rows made-up statistics are given for (the backward
// kernels' inputs).
constexpr float kRowSentinel = -777.0f;
using RowKernel = std::function<void(float* out, const float* x, const float* g, const float* w, size_t first,
                                     int64_t rows, int64_t n, bool)>;
std::vector<std::pair<const char*, RowKernel>> row_kernels() {
  // Made-up statistics for the backward kernels, one per row.
  static const std::vector<double> mean = [] {
    std::vector<double> m;
    for (int i = 0; i < 64; ++i) m.push_back(0.1 * ((i * 7) % 11 - 5));
    return m;
  }();
  static const std::vector<double> rstd = [] {
    std::vector<double> r;
    for (int i = 0; i < 64; ++i) r.push_back(0.5 + 0.1 * ((i * 5) % 13));
    return r;
  }();
  return {
      {"softmax", [](float* o, const float* x, const float*, const float*, size_t, int64_t rows, int64_t n,
                     bool s) { cpu::vec::softmax_rows(o, n, x, n, rows, n, false, s); }},
      {"log_softmax", [](float* o, const float* x, const float*, const float*, size_t, int64_t rows, int64_t n,
                         bool s) { cpu::vec::softmax_rows(o, n, x, n, rows, n, true, s); }},
      {"softmax_backward", [](float* o, const float* x, const float* g, const float*, size_t, int64_t rows, int64_t n,
                              bool s) { cpu::vec::softmax_backward_rows(o, n, g, n, x, n, rows, n, false, s); }},
      {"log_softmax_backward",
       [](float* o, const float* x, const float* g, const float*, size_t, int64_t rows, int64_t n, bool s) {
         cpu::vec::softmax_backward_rows(o, n, g, n, x, n, rows, n, true, s);
       }},
      {"layer_norm",
       [](float* o, const float* x, const float*, const float* w, size_t, int64_t rows, int64_t n, bool s) {
         std::vector<double> m(static_cast<size_t>(rows)), r(m.size());
         cpu::vec::layer_norm_rows(o, x, rows, n, w, w, 1e-5, m.data(), r.data(), s);
       }},
      {"layer_norm_backward",
       [](float* o, const float* x, const float* g, const float* w, size_t first, int64_t rows, int64_t n, bool s) {
         cpu::vec::layer_norm_backward_rows(o, g, x, rows, n, w, mean.data() + first, rstd.data() + first, s);
       }},
      {"rms_norm",
       [](float* o, const float* x, const float*, const float* w, size_t, int64_t rows, int64_t n, bool s) {
         std::vector<float> r(static_cast<size_t>(rows));
         cpu::vec::rms_norm_rows(o, x, rows, n, w, 1e-5, r.data(), s);
       }},
      {"rms_norm_backward",
       [](float* o, const float* x, const float* g, const float* w, size_t, int64_t rows, int64_t n, bool s) {
         std::vector<double> r(static_cast<size_t>(rows));
         cpu::vec::rms_norm_backward_rows(o, g, x, rows, n, w, 1e-5, r.data(), s);
       }},
  };
}

// The row kernels with their output streamed, at rows of every length and
// outputs off the vector alignment, three rows per call (one fence after
// them): the same bits as the plain stores give (softmax's rows past its
// stack buffer included), nothing written outside.
TEST(CpuVectorMath, StreamedRowsGiveTheSameBitsAtAnyAlignment) {
  if (!cpu::vec::enabled())
    GTEST_SKIP() << "built without Highway or ANVIL_CPU_VECTOR=off: the kernels use scalar loops";
  std::mt19937 rng(22);
  std::normal_distribution<float> normal;
  const int64_t rows = 3;
  for (int64_t n : kRowLengths) {
    const size_t size = static_cast<size_t>(rows * n);
    std::vector<float> x(size), g(size), w(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    for (float& v : g) v = normal(rng);
    for (float& v : w) v = normal(rng);
    for (const auto& [name, kernel] : row_kernels()) {
      std::vector<float> plain(size);
      kernel(plain.data(), x.data(), g.data(), w.data(), 0, rows, n, false);
      for (int64_t offset : {0, 1, 5}) {
        std::vector<float> big(size + 8, kRowSentinel);
        kernel(big.data() + offset, x.data(), g.data(), w.data(), 0, rows, n, true);
        EXPECT_EQ(0, std::memcmp(big.data() + offset, plain.data(), size * sizeof(float)))
            << name << " n=" << n << " offset " << offset;
        for (int64_t i = 0; i < offset; ++i) EXPECT_EQ(big[static_cast<size_t>(i)], kRowSentinel) << name;
        for (size_t i = size + static_cast<size_t>(offset); i < size + 8; ++i) EXPECT_EQ(big[i], kRowSentinel) << name;
      }
    }
  }
}

// Each thread's share of rows goes to a kernel in one call: every row gives
// the bits it gives alone, special values included, and only its own
// output changes. 37 rows: softmax over short rows works in batches of a
// vector's lanes (up to 16), so they span two whole batches and a part.
TEST(CpuVectorMath, RowsOfOneCallGiveTheBitsOfSingleRows) {
  if (!cpu::vec::enabled())
    GTEST_SKIP() << "built without Highway or ANVIL_CPU_VECTOR=off: the kernels use scalar loops";
  std::mt19937 rng(23);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int64_t rows = 37;
  for (int64_t n : kRowLengths) {
    if (n > 1000) continue;  // the long rows: StreamedRowsGiveTheSameBitsAtAnyAlignment
    std::vector<float> x(static_cast<size_t>(rows * n)), g(x.size()), w(static_cast<size_t>(n));
    for (float& v : x) v = normal(rng);
    for (float& v : g) v = normal(rng);
    for (float& v : w) v = normal(rng);
    x[static_cast<size_t>(2 * n + n / 2)] = std::numeric_limits<float>::quiet_NaN();
    x[static_cast<size_t>(5 * n)] = std::numeric_limits<float>::infinity();
    x[static_cast<size_t>(9 * n + n - 1)] = -std::numeric_limits<float>::infinity();
    x[static_cast<size_t>(20 * n + n / 3)] = std::numeric_limits<float>::quiet_NaN();
    x[static_cast<size_t>(36 * n)] = std::numeric_limits<float>::infinity();
    for (const auto& [name, kernel] : row_kernels()) {
      std::vector<float> together(x.size(), kRowSentinel), alone(x.size(), kRowSentinel);
      kernel(together.data(), x.data(), g.data(), w.data(), 0, rows, n, false);
      for (int64_t r = 0; r < rows; ++r)
        kernel(alone.data() + r * n, x.data() + r * n, g.data() + r * n, w.data(), static_cast<size_t>(r), 1, n, false);
      EXPECT_EQ(0, std::memcmp(together.data(), alone.data(), x.size() * sizeof(float))) << name << " n=" << n;
    }
  }
}

// softmax_rows on every Highway target this CPU runs (here AVX3, AVX2, SSE4
// and SCALAR): rows in registers are up to four vectors, so up to 32 floats
// on AVX2, 16 on SSE4 and 4 on SCALAR, taken in pairs, in batches of a
// vector's lanes; longer rows go three in flight. 37 rows a call, against
// float64, with a NaN and an inf in later rows; and each row the bits it
// gives alone.
TEST(CpuVectorMath, SoftmaxRowsOnEveryTarget) {
  if (!cpu::vec::enabled())
    GTEST_SKIP() << "built without Highway or ANVIL_CPU_VECTOR=off: the kernels use scalar loops";
  std::mt19937 rng(26);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int64_t rows = 37;
  std::string targets;
  cpu::vec::for_each_target([&](const char* target) {
    targets += std::string(targets.empty() ? "" : ", ") + target;
    for (int64_t n : {1, 3, 4, 8, 12, 16, 24, 32, 48, 64, 65, 100, 1000}) {
      std::vector<float> x(static_cast<size_t>(rows * n));
      for (float& v : x) v = normal(rng);
      x[static_cast<size_t>(17 * n + n / 2)] = std::numeric_limits<float>::quiet_NaN();
      x[static_cast<size_t>(30 * n)] = -std::numeric_limits<float>::infinity();
      for (bool log : {false, true}) {
        const std::string what =
            std::string(log ? "log_softmax" : "softmax") + " on " + target + " n=" + std::to_string(n);
        std::vector<float> y(x.size()), alone(x.size());
        cpu::vec::softmax_rows(y.data(), n, x.data(), n, rows, n, log);
        for (int64_t r = 0; r < rows; ++r) {
          cpu::vec::softmax_rows(alone.data() + r * n, n, x.data() + r * n, n, 1, n, log);
          const std::vector<double> row(x.begin() + r * n, x.begin() + (r + 1) * n);
          if (r == 30 && n == 1) continue;  // a row of only -inf: NaN, checked by the softmax tests
          const std::vector<double> got(y.begin() + r * n, y.begin() + (r + 1) * n);
          expect_float_close(got, softmax_ref(row, log), row, log ? 2e-5 : 1e-7, 1e-5,
                             what + " row " + std::to_string(r));
        }
        EXPECT_EQ(0, std::memcmp(y.data(), alone.data(), y.size() * sizeof(float))) << what << ": rows alone";
      }
    }
  });
  ASSERT_FALSE(targets.empty());
  std::printf("softmax rows checked on: %s\n", targets.c_str());
}

// layer_norm_rows on every Highway target, rows long enough to go three in
// flight (past 256 floats) and shorter: 37 rows a call around a mean of 100,
// against float64, and each row the bits it gives alone.
TEST(CpuVectorMath, LayerNormRowsOnEveryTarget) {
  if (!cpu::vec::enabled())
    GTEST_SKIP() << "built without Highway or ANVIL_CPU_VECTOR=off: the kernels use scalar loops";
  std::mt19937 rng(27);
  std::normal_distribution<float> normal(100.0f, 3.0f);
  const int64_t rows = 37;
  cpu::vec::for_each_target([&](const char* target) {
    for (int64_t n : {1, 17, 64, 257, 1000, 2049}) {
      std::vector<float> x(static_cast<size_t>(rows * n)), w(static_cast<size_t>(n)), b(w.size());
      for (float& v : x) v = normal(rng);
      for (float& v : w) v = normal(rng) / 100.0f;
      for (float& v : b) v = normal(rng) - 100.0f;
      const std::string what = std::string("layer_norm on ") + target + " n=" + std::to_string(n);
      std::vector<float> y(x.size()), alone(x.size());
      std::vector<double> mean(static_cast<size_t>(rows)), rstd(mean.size()), m1(1), r1(1);
      cpu::vec::layer_norm_rows(y.data(), x.data(), rows, n, w.data(), b.data(), 1e-5, mean.data(), rstd.data(), false);
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x.data() + r * n;
        cpu::vec::layer_norm_rows(alone.data() + r * n, xr, 1, n, w.data(), b.data(), 1e-5, m1.data(), r1.data(),
                                  false);
        EXPECT_EQ(m1[0], mean[static_cast<size_t>(r)]) << what << " row " << r;
        EXPECT_EQ(r1[0], rstd[static_cast<size_t>(r)]) << what << " row " << r;
        double m = 0, sq = 0;
        for (int64_t j = 0; j < n; ++j) m += xr[j];
        m /= static_cast<double>(n);
        for (int64_t j = 0; j < n; ++j) sq += (xr[j] - m) * (xr[j] - m);
        const double rs = 1 / std::sqrt(sq / static_cast<double>(n) + 1e-5);
        EXPECT_NEAR(mean[static_cast<size_t>(r)], m, 1e-6 * std::abs(m)) << what << " row " << r;
        EXPECT_NEAR(rstd[static_cast<size_t>(r)], rs, 1e-4 * rs) << what << " row " << r;
        std::vector<double> want, in(xr, xr + n);
        for (int64_t j = 0; j < n; ++j)
          want.push_back((xr[j] - m) * rs * w[static_cast<size_t>(j)] + b[static_cast<size_t>(j)]);
        expect_float_close(std::vector<double>(y.begin() + r * n, y.begin() + (r + 1) * n), want, in, 1e-4, 1e-4,
                           what + " row " + std::to_string(r));
      }
      EXPECT_EQ(0, std::memcmp(y.data(), alone.data(), y.size() * sizeof(float))) << what << ": rows alone";
    }
  });
}

// softmax_rows in place (y == x): the long rows run three in flight, each
// loop writing one row while it reads the two after it, which must still
// hold their inputs. Same bits as out of place, 1 to 7 rows a call.
TEST(CpuVectorMath, SoftmaxRowsInPlaceGiveTheBitsOutOfPlace) {
  if (!cpu::vec::enabled())
    GTEST_SKIP() << "built without Highway or ANVIL_CPU_VECTOR=off: the kernels use scalar loops";
  std::mt19937 rng(25);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int64_t n : kRowLengths) {
    for (int64_t rows = 1; rows <= 7; rows += 3) {
      std::vector<float> x(static_cast<size_t>(rows * n));
      for (float& v : x) v = normal(rng);
      for (bool log : {false, true}) {
        std::vector<float> want(x.size()), y = x;
        cpu::vec::softmax_rows(want.data(), n, x.data(), n, rows, n, log);
        cpu::vec::softmax_rows(y.data(), n, y.data(), n, rows, n, log);
        EXPECT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
            << (log ? "log_softmax" : "softmax") << " n=" << n << " rows=" << rows;
      }
    }
  }
}

// softmax_rows with rows apart (a row stride past n, as a StridedLoop run
// over a non-contiguous tensor gives): the rows between are not touched.
TEST(CpuVectorMath, SoftmaxRowsWithAStride) {
  if (!cpu::vec::enabled())
    GTEST_SKIP() << "built without Highway or ANVIL_CPU_VECTOR=off: the kernels use scalar loops";
  std::mt19937 rng(24);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int64_t n : {int64_t{3}, int64_t{64}, int64_t{100}}) {
    const int64_t rows = 37, stride = n + 5;  // short rows go in batches of up to 16
    std::vector<float> x(static_cast<size_t>(rows * stride)), g(x.size());
    for (float& v : x) v = normal(rng);
    for (float& v : g) v = normal(rng);
    for (bool log : {false, true}) {
      std::vector<float> y(x.size(), kRowSentinel), gi(x.size(), kRowSentinel);
      cpu::vec::softmax_rows(y.data(), stride, x.data(), stride, rows, n, log);
      cpu::vec::softmax_backward_rows(gi.data(), stride, g.data(), stride, y.data(), stride, rows, n, log);
      for (int64_t r = 0; r < rows; ++r) {
        std::vector<float> want(static_cast<size_t>(n)), want_gi(want.size());
        cpu::vec::softmax_rows(want.data(), n, x.data() + r * stride, n, 1, n, log);
        cpu::vec::softmax_backward_rows(want_gi.data(), n, g.data() + r * stride, n, want.data(), n, 1, n, log);
        EXPECT_EQ(0, std::memcmp(y.data() + r * stride, want.data(), want.size() * sizeof(float))) << "row " << r;
        EXPECT_EQ(0, std::memcmp(gi.data() + r * stride, want_gi.data(), want.size() * sizeof(float))) << "row " << r;
        for (int64_t k = n; k < stride; ++k) {
          EXPECT_EQ(y[static_cast<size_t>(r * stride + k)], kRowSentinel);
          EXPECT_EQ(gi[static_cast<size_t>(r * stride + k)], kRowSentinel);
        }
      }
    }
  }
}

TEST(CpuVectorMath, ReductionsOfEveryLengthWithSpecialValues) {
  std::mt19937 rng(8);
  for (int64_t n : kRowLengths) {
    auto x = random_tensor<float>({4, n}, rng, -2, 2);
    x.storage[static_cast<size_t>(n) + n - 1] = std::numeric_limits<float>::quiet_NaN();  // row 1: NaN last
    x.storage[2 * static_cast<size_t>(n)] = std::numeric_limits<float>::infinity();  // row 2: +inf first
    x.storage[3 * static_cast<size_t>(n) + n / 2] = -3e38f;  // row 3: large
    const std::vector<double> xv = values(x.view);
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::Var}) {
      if (op == ReduceOp::Var && n == 1) continue;
      auto out = filled_tensor<float>({4, 1});
      kernel_for<kernel::Reduce>(DeviceType::CPU)(op, out.view, x.view, ReduceParams{});
      std::vector<double> want;
      for (int64_t r = 0; r < 4; ++r) {
        const double* p = xv.data() + r * n;
        double s = 0, mx = -kInf, mn = kInf;
        bool nan = false;
        for (int64_t j = 0; j < n; ++j)
          s += p[j], mx = std::max(mx, p[j]), mn = std::min(mn, p[j]), nan |= std::isnan(p[j]);
        double m2 = 0;
        for (int64_t j = 0; j < n; ++j) m2 += (p[j] - s / n) * (p[j] - s / n);
        double v = op == ReduceOp::Sum    ? s
                   : op == ReduceOp::Mean ? s / n
                   : op == ReduceOp::Max  ? mx
                   : op == ReduceOp::Min  ? mn
                                          : m2 / (n - 1);
        if (nan) v = kNaN;
        if (op == ReduceOp::Var && std::isinf(s)) v = kNaN;
        want.push_back(v);
      }
      expect_float_close(values(out.view), want, {0, 0, 0, 0}, 1e-5, 1e-5,
                         std::string(ops::reduce_info(op).name) + " n=" + std::to_string(n));
    }
  }
}

// rms_norm's one-pass backward in float32 (the vector rows) against the
// float64 kernel on the same values: grad_in and grad_weight, with and
// without a weight, each gradient alone.
TEST(CpuVectorMath, RmsNormBackwardRowsOfEveryLength) {
  std::mt19937 rng(7);
  for (int64_t n : kRowLengths) {
    const int64_t rows = 3;
    auto x = random_tensor<float>({rows, n}, rng, -3, 3);
    auto w = random_tensor<float>({n}, rng, 0.5, 2);
    auto g = random_tensor<float>({rows, n}, rng, -1, 1);
    const std::vector<double> xv = values(x.view), wv = values(w.view), gv = values(g.view);
    auto x64 = tensor_of<double>({rows, n}, xv), g64 = tensor_of<double>({rows, n}, gv);
    auto w64 = tensor_of<double>({n}, wv);
    for (bool with_weight : {true, false}) {
      auto gi = filled_tensor<float>({rows, n}), gw = filled_tensor<float>({n});
      auto gi64 = filled_tensor<double>({rows, n}), gw64 = filled_tensor<double>({n});
      kernel_for<kernel::RmsNormBackward>(DeviceType::CPU)(gi.view, &gw.view, g.view, x.view,
                                                           with_weight ? &w.view : nullptr, 1e-5);
      kernel_for<kernel::RmsNormBackward>(DeviceType::CPU)(gi64.view, &gw64.view, g64.view, x64.view,
                                                           with_weight ? &w64.view : nullptr, 1e-5);
      const std::string what = std::string(with_weight ? "weighted" : "plain") + " n=" + std::to_string(n);
      expect_float_close(values(gi.view), values(gi64.view), xv, 1e-5, 1e-4, "rms_norm backward grad_in " + what);
      expect_float_close(values(gw.view), values(gw64.view), wv, 1e-5, 1e-5, "rms_norm backward grad_weight " + what);
      // One gradient at a time gives the same values.
      auto gi_alone = filled_tensor<float>({rows, n}), gw_alone = filled_tensor<float>({n});
      kernel_for<kernel::RmsNormBackward>(DeviceType::CPU)(gi_alone.view, nullptr, g.view, x.view,
                                                           with_weight ? &w.view : nullptr, 1e-5);
      kernel_for<kernel::RmsNormBackward>(DeviceType::CPU)(View{}, &gw_alone.view, g.view, x.view,
                                                           with_weight ? &w.view : nullptr, 1e-5);
      EXPECT_EQ(values(gi_alone.view), values(gi.view)) << what;
      EXPECT_EQ(values(gw_alone.view), values(gw.view)) << what;
    }
  }
}

// Sum, mean, max and min over the first dim (column reductions) of float32,
// 37 rows so that the float buffer is flushed to the double accumulators
// twice and part way: max and min equal the float64 loop exactly (NaN and
// inf included); sums stay within four units of roundoff of sum |x|.
TEST(CpuVectorMath, FirstDimReductionsOfEveryWidthWithSpecialValues) {
  std::mt19937 rng(9);
  for (int64_t n : kRowLengths) {
    const int64_t rows = 37;
    auto x = random_tensor<float>({rows, n}, rng, -2, 2);
    x.storage[static_cast<size_t>(n) - 1] = std::numeric_limits<float>::quiet_NaN();  // last column, row 0
    x.storage[20 * static_cast<size_t>(n)] = std::numeric_limits<float>::infinity();  // first column, row 20
    x.storage[35 * static_cast<size_t>(n) + n / 2] = -3e38f;  // a middle column, row 35
    const std::vector<double> xv = values(x.view);
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min}) {
      auto out = filled_tensor<float>({1, n});
      kernel_for<kernel::Reduce>(DeviceType::CPU)(op, out.view, x.view, ReduceParams{});
      const std::vector<double> got = values(out.view);
      int reported = 0;
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, abs_sum = 0, mx = -kInf, mn = kInf;
        bool nan = false;
        for (int64_t r = 0; r < rows; ++r) {
          const double v = xv[r * n + j];
          s += v, abs_sum += std::fabs(v), mx = std::max(mx, v), mn = std::min(mn, v), nan |= std::isnan(v);
        }
        const bool additive = op == ReduceOp::Sum || op == ReduceOp::Mean;
        const double scale = op == ReduceOp::Mean ? 1.0 / rows : 1.0;
        const double want = nan ? kNaN : additive ? s * scale : op == ReduceOp::Max ? mx : mn;
        const double bound = additive ? 4 * std::ldexp(abs_sum * scale, -24) : 0;
        const bool ok = std::isnan(want)   ? std::isnan(got[j])
                        : std::isinf(want) ? got[j] == want
                                           : std::fabs(got[j] - static_cast<float>(want)) <= bound;
        if (!ok && reported++ < 5)
          ADD_FAILURE() << ops::reduce_info(op).name << " over rows, n=" << n << ": column " << j << " is " << got[j]
                        << ", expected " << want << " within " << bound;
      }
    }
  }
}

TEST(CpuVectorMath, CapabilityNamesTheVectorTarget) {
  const CpuCapability c = cpu_capability();
  EXPECT_FALSE(c.vector_math.empty());
  EXPECT_NE(to_string(c).find("vector math " + c.vector_math), std::string::npos) << to_string(c);
  if (!cpu::vec::enabled()) GTEST_SKIP() << "vector kernels off: " << c.vector_math;
  // A CPU with AVX-512 or AVX2 must not run the vector math on a narrower target.
  if (c.isa == "avx512_core") {
    EXPECT_EQ(c.vector_math.rfind("AVX3", 0), 0u) << c.vector_math;
  }
  if (c.isa == "avx2") {
    EXPECT_EQ(c.vector_math.rfind("AVX2", 0), 0u) << c.vector_math;
  }
}

}  // namespace
}  // namespace anvil::test
