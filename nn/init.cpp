#include "nn/init.h"

#include <cmath>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"

namespace anvil::nn::init {

namespace {

void check_floating(const char* fn, const Tensor& t) {
  ANVIL_CHECK(t.defined(), "nn::init::", fn, ": got an undefined tensor");
  ANVIL_CHECK(t.is_floating_point(), "nn::init::", fn, ": expected a floating tensor, got ", t.dtype(), " ",
              t.shape_str());
}

// Random draws happen in float32 or float64 and are cast into t by copy_, so
// half-precision parameters get the same values as a float32 init, rounded.
TensorOptions draw_options(const Tensor& t) {
  return TensorOptions().dtype(t.dtype() == kFloat64 ? kFloat64 : kFloat32).device(t.device());
}

Tensor fill_from(Tensor t, const Tensor& values) {
  NoGradGuard no_grad;
  t.copy_(values);
  return t;
}

double fan_for(const Tensor& t, FanMode mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return static_cast<double>(mode == FanMode::FanIn ? fan_in : fan_out);
}

// The inverse error function, to double precision: a rational first guess
// (Giles, "Approximating the erfinv function") polished by Newton steps.
double erfinv(double y) {
  if (y <= -1.0) return -INFINITY;
  if (y >= 1.0) return INFINITY;
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
                     0.246640727, 1.50140941})
      p = c + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
                     1.00167406, 2.83297682})
      p = c + p * w;
    x = p * y;
  }
  const double two_over_sqrt_pi = 2.0 / std::sqrt(M_PI);
  for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}

double normal_cdf(double x) { return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))); }

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case Nonlinearity::Linear:
    case Nonlinearity::Conv1d:
    case Nonlinearity::Conv2d:
    case Nonlinearity::Conv3d:
    case Nonlinearity::Sigmoid:
      return 1.0;
    case Nonlinearity::Tanh:
      return 5.0 / 3.0;
    case Nonlinearity::ReLU:
      return std::sqrt(2.0);
    case Nonlinearity::LeakyReLU:
      return std::sqrt(2.0 / (1.0 + param * param));
    case Nonlinearity::SELU:
      return 3.0 / 4.0;
  }
  fail("nn::init::calculate_gain: unknown nonlinearity");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  ANVIL_CHECK(t.defined() && t.dim() >= 2, "nn::init: fan in and fan out need a tensor with at least 2 dims ",
              "([out, in, *kernel]), got ", t.defined() ? t.shape_str() : std::string("an undefined tensor"));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor uniform_(Tensor t, double low, double high) {
  check_floating("uniform_", t);
  ANVIL_CHECK(low <= high, "nn::init::uniform_: expected low <= high, got low ", low, ", high ", high);
  NoGradGuard no_grad;
  return fill_from(t, rand(t.shape(), draw_options(t)) * (high - low) + low);
}

Tensor normal_(Tensor t, double mean, double std) {
  check_floating("normal_", t);
  ANVIL_CHECK(std >= 0, "nn::init::normal_: expected std >= 0, got ", std);
  NoGradGuard no_grad;
  return fill_from(t, randn(t.shape(), draw_options(t)) * std + mean);
}

Tensor trunc_normal_(Tensor t, double mean, double std, double a, double b) {
  check_floating("trunc_normal_", t);
  ANVIL_CHECK(std > 0 && a < b, "nn::init::trunc_normal_: expected std > 0 and a < b, got std ", std, ", a ", a, ", b ",
              b);
  NoGradGuard no_grad;
  // Uniform between the CDF values of the bounds, mapped back through the
  // inverse CDF: exact, with no rejection loop. Done on the host (init is
  // not hot), with the uniforms still drawn from anvil's generator.
  const double lo = 2.0 * normal_cdf((a - mean) / std) - 1.0, hi = 2.0 * normal_cdf((b - mean) / std) - 1.0;
  std::vector<double> u = rand(t.shape(), kFloat64).to_vector<double>();
  for (double& v : u) {
    double x = erfinv(lo + (hi - lo) * v) * std * std::sqrt(2.0) + mean;
    v = std::min(std::max(x, a), b);
  }
  return fill_from(t, from_vector(u, t.shape()));
}

Tensor constant_(Tensor t, double value) {
  ANVIL_CHECK(t.defined(), "nn::init::constant_: got an undefined tensor");
  NoGradGuard no_grad;
  t.fill_(value);
  return t;
}

Tensor zeros_(Tensor t) { return constant_(std::move(t), 0.0); }
Tensor ones_(Tensor t) { return constant_(std::move(t), 1.0); }

Tensor xavier_uniform_(Tensor t, double gain) {
  check_floating("xavier_uniform_", t);
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform_(std::move(t), -bound, bound);
}

Tensor xavier_normal_(Tensor t, double gain) {
  check_floating("xavier_normal_", t);
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return normal_(std::move(t), 0.0, gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out)));
}

Tensor kaiming_uniform_(Tensor t, const KaimingOptions& o) {
  check_floating("kaiming_uniform_", t);
  const double bound = calculate_gain(o.nonlinearity, o.a) * std::sqrt(3.0 / fan_for(t, o.mode));
  return uniform_(std::move(t), -bound, bound);
}

Tensor kaiming_normal_(Tensor t, const KaimingOptions& o) {
  check_floating("kaiming_normal_", t);
  return normal_(std::move(t), 0.0, calculate_gain(o.nonlinearity, o.a) / std::sqrt(fan_for(t, o.mode)));
}

}  // namespace anvil::nn::init
