// The elementwise half of vector_math.h: activations and their fused
// gradients over contiguous floats, compiled once per Highway target
// (hwy/foreach_target.h re-includes this file) and called through
// HWY_DYNAMIC_DISPATCH, which picks the best target the CPU supports on the
// first call.
#include "kernels/cpu/vector_math.h"

#if ANVIL_HAVE_HIGHWAY

#include "kernels/cpu/highway_targets.h"  // before any Highway header

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/vector_math.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include <array>
#include <cstdint>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/cpu/vector_math-inl.h"
#include "kernels/ops/math.h"

HWY_BEFORE_NAMESPACE();
namespace anvil::cpu::vec::HWY_NAMESPACE {

// out[i] = f(in[k][i]) for fewer than one vector of elements, through buffers
// of one vector, so no load or store reaches past the arrays.
template <size_t N, class F>
HWY_INLINE void MapPartial(float* HWY_RESTRICT out, const std::array<const float*, N>& in, int64_t n, F f) {
  const D d;
  HWY_ALIGN float buf[N][hn::MaxLanes(d)] = {};
  for (size_t k = 0; k < N; ++k)
    for (int64_t i = 0; i < n; ++i) buf[k][i] = in[k][i];
  V r;
  if constexpr (N == 1)
    r = f(d, hn::Load(d, buf[0]));
  else
    r = f(d, hn::Load(d, buf[0]), hn::Load(d, buf[1]));
  hn::Store(r, d, buf[0]);
  for (int64_t i = 0; i < n; ++i) out[i] = buf[0][i];
}

// out[i] = f(in[0][i], ...) over n floats; out may equal an input. stream:
// out written with streaming stores (vector_math.h, stream_output).
template <size_t N, class F>
HWY_INLINE void MapN(float* out, std::array<const float*, N> in, int64_t n, bool stream, F f) {
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto apply = [&](int64_t i) {
    for (size_t k = 0; k < N; ++k) PrefetchAhead(in[k] + i, L);
    if constexpr (N == 1)
      return f(d, hn::LoadU(d, in[0] + i));
    else
      return f(d, hn::LoadU(d, in[0] + i), hn::LoadU(d, in[1] + i));
  };
  int64_t i = 0;
  if (stream) {
    const int64_t head = ElementsBeforeAlignment(out, L * static_cast<int64_t>(sizeof(float)), sizeof(float), n);
    if (head > 0) MapPartial<N>(out, in, head, f);
    for (i = head; i + L <= n; i += L) hn::Stream(apply(i), d, out + i);
    hwy::FlushStream();  // the streamed lines reach memory before the threads join
  } else {
    for (; i + L <= n; i += L) hn::StoreU(apply(i), d, out + i);
  }
  if (i < n) {
    std::array<const float*, N> rest;
    for (size_t k = 0; k < N; ++k) rest[k] = in[k] + i;
    MapPartial<N>(out + i, rest, n - i, f);
  }
}

// The math passed to Map1/Map2 as a lambda: a function's name passed as F
// is a pointer, and GCC 12 called it once a vector (its constants loaded
// again each call) where a lambda's body is inlined into the loop.
template <auto kFn> inline constexpr auto Inlined = [](D d, auto... v) { return kFn(d, v...); };

template <class F> HWY_INLINE void Map1(float* out, const float* in, int64_t n, bool stream, F f) {
  MapN<1>(out, {in}, n, stream, f);
}
template <class F> HWY_INLINE void Map2(float* out, const float* a, const float* b, int64_t n, bool stream, F f) {
  MapN<2>(out, {a, b}, n, stream, f);
}

namespace m = ops::math;

// The op tables' formulas (kernels/ops/unary_ops.h, binary_ops.h), term for term.
// gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x s with s = sigmoid(2u) = 1 / (1 + e^-2u):
// one exp, and no 1 + tanh(u) that cancels where tanh is near -1 (x < -3).
// u = a x + b x^3 (a = sqrt(2 / pi), b = 0.044715 a), so -2u = x (-2a - 2b x^2):
// an FMA and a multiply on x^2.
constexpr double kGeluA = m::kSqrt2OverPi, kGeluB = m::kGeluCoeff * m::kSqrt2OverPi;
HWY_INLINE V GeluMinusTwoU(D d, V x, V x2) {
  return hn::Mul(x, hn::MulAdd(hn::Set(d, float(-2 * kGeluB)), x2, hn::Set(d, float(-2 * kGeluA))));
}
HWY_INLINE V GeluTanhF(D d, V x) {
  return hn::Div(x, hn::Add(hn::Set(d, 1.0f), ExpF(d, GeluMinusTwoU(d, x, hn::Mul(x, x)))));
}
HWY_INLINE V GeluErfF(D d, V x) {
  const V cdf = hn::Add(hn::Set(d, 1.0f), ErfF(d, hn::Mul(x, hn::Set(d, float(m::kInvSqrt2)))));
  return hn::Mul(hn::Mul(hn::Set(d, 0.5f), x), cdf);
}
HWY_INLINE V SiluF(D d, V x) { return hn::Div(x, hn::Add(hn::Set(d, 1.0f), ExpF(d, hn::Neg(x)))); }

// d/dx = s + 2 x s (1 - s) u', with s as in GeluTanhF (0.5 (1 + t) = s and
// 0.5 (1 - t^2) = 2 s (1 - s)), 1 - s = e s taken from the same exp e = e^-2u.
// 2 x u' = x (2a + 6b x^2), as -2u an FMA and a multiply on x^2.
HWY_INLINE V GeluTanhBackwardF(D d, V g, V x) {
  const V one = hn::Set(d, 1.0f);
  const V x2 = hn::Mul(x, x);
  const V e = ExpF(d, GeluMinusTwoU(d, x, x2));
  const V s = hn::Div(one, hn::Add(one, e));
  const V one_minus_s = hn::IfThenElse(hn::Eq(e, Inf(d)), one, hn::Mul(e, s));
  const V two_x_du = hn::Mul(x, hn::MulAdd(hn::Set(d, float(6 * kGeluB)), x2, hn::Set(d, float(2 * kGeluA))));
  const V slope = hn::Mul(s, one_minus_s);
  // Where the sigmoid has saturated the second term is 0, though x u' may be infinite there.
  const V second = hn::IfThenZeroElse(hn::Eq(slope, hn::Zero(d)), hn::Mul(two_x_du, slope));
  return hn::Mul(g, hn::Add(s, second));
}
HWY_INLINE V GeluErfBackwardF(D d, V g, V x) {
  const V cdf =
      hn::Mul(hn::Set(d, 0.5f), hn::Add(hn::Set(d, 1.0f), ErfF(d, hn::Mul(x, hn::Set(d, float(m::kInvSqrt2))))));
  const V pdf = hn::Mul(hn::Set(d, float(m::kInvSqrt2Pi)), ExpF(d, hn::Mul(hn::Set(d, -0.5f), hn::Mul(x, x))));
  return hn::Mul(g, hn::MulAdd(x, pdf, cdf));
}
HWY_INLINE V SiluBackwardF(D d, V g, V x) {
  const V one = hn::Set(d, 1.0f);
  const V s = hn::Div(one, hn::Add(one, ExpF(d, hn::Neg(x))));
  return hn::Mul(hn::Mul(g, s), hn::MulAdd(x, hn::Sub(one, s), one));
}

// g past 20, else g * sigmoid(x), as the op table's SoftplusBackward.
HWY_INLINE V SoftplusBackwardF(D d, V g, V x) {
  const V s = hn::Div(g, hn::Add(hn::Set(d, 1.0f), ExpF(d, hn::Neg(x))));
  return hn::IfThenElse(hn::Gt(x, hn::Set(d, 20.0f)), g, s);
}

// 2 / sqrt(pi) exp(-x^2) g, as the op table's ErfBackward.
HWY_INLINE V ErfBackwardF(D d, V g, V x) {
  return hn::Mul(g, hn::Mul(hn::Set(d, float(m::kTwoOverSqrtPi)), ExpF(d, hn::Neg(hn::Mul(x, x)))));
}

// false: no vector kernel for op.
bool Unary(UnaryOp op, float beta, float threshold, float* out, const float* in, int64_t n, bool stream) {
  switch (op) {
    case UnaryOp::Exp:
      Map1(out, in, n, stream, Inlined<ExpF>);
      return true;
    case UnaryOp::Expm1:
      Map1(out, in, n, stream, Inlined<Expm1F>);
      return true;
    case UnaryOp::Log:
      Map1(out, in, n, stream, Inlined<LogF>);
      return true;
    case UnaryOp::Log1p:
      Map1(out, in, n, stream, Inlined<Log1pF>);
      return true;
    case UnaryOp::Tanh:
      Map1(out, in, n, stream, Inlined<TanhF>);
      return true;
    case UnaryOp::Sigmoid:
      Map1(out, in, n, stream, Inlined<SigmoidF>);
      return true;
    case UnaryOp::Erf:
      Map1(out, in, n, stream, Inlined<ErfF>);
      return true;
    case UnaryOp::GeluTanh:
      Map1(out, in, n, stream, Inlined<GeluTanhF>);
      return true;
    case UnaryOp::GeluErf:
      Map1(out, in, n, stream, Inlined<GeluErfF>);
      return true;
    case UnaryOp::Silu:
      Map1(out, in, n, stream, Inlined<SiluF>);
      return true;
    // x < 0 ? 0 : x, as the op table's Relu: NaN and -0 pass through.
    case UnaryOp::Relu:
      Map1(out, in, n, stream, [](D d, V x) { return hn::IfThenZeroElse(hn::Lt(x, hn::Zero(d)), x); });
      return true;
    case UnaryOp::Softplus:
      // x where beta x > threshold, else log1p(e^(beta x)) / beta (NaN fails the test: NaN).
      // At beta 1 (the default) without the multiply and the division, the
      // same bits; exp and log1p, long polynomials, bound the rest.
      if (beta == 1.0f) {
        Map1(out, in, n, stream, [threshold](D d, V x) {
          return hn::IfThenElse(hn::Gt(x, hn::Set(d, threshold)), x, Log1pF(d, ExpF(d, x)));
        });
        return true;
      }
      Map1(out, in, n, stream, [beta, threshold](D d, V x) {
        const V bx = hn::Mul(x, hn::Set(d, beta));
        const V soft = hn::Div(Log1pF(d, ExpF(d, bx)), hn::Set(d, beta));
        return hn::IfThenElse(hn::Gt(bx, hn::Set(d, threshold)), x, soft);
      });
      return true;
    default:
      return false;
  }
}

bool Binary(BinaryOp op, float* out, const float* g, const float* x, int64_t n, bool stream) {
  switch (op) {
    case BinaryOp::GeluTanhBackward:
      Map2(out, g, x, n, stream, Inlined<GeluTanhBackwardF>);
      return true;
    case BinaryOp::GeluErfBackward:
      Map2(out, g, x, n, stream, Inlined<GeluErfBackwardF>);
      return true;
    case BinaryOp::SiluBackward:
      Map2(out, g, x, n, stream, Inlined<SiluBackwardF>);
      return true;
    case BinaryOp::SoftplusBackward:
      Map2(out, g, x, n, stream, Inlined<SoftplusBackwardF>);
      return true;
    // From the forward's output y, operation for operation as the op table's
    // functors (no fused multiply-add), so the same bits as the scalar loop.
    case BinaryOp::TanhBackward:  // g (1 - y y)
      Map2(out, g, x, n, stream, [](D d, V gv, V y) { return hn::Mul(gv, hn::Sub(hn::Set(d, 1.0f), hn::Mul(y, y))); });
      return true;
    case BinaryOp::SigmoidBackward:  // g y (1 - y)
      Map2(out, g, x, n, stream, [](D d, V gv, V y) { return hn::Mul(hn::Mul(gv, y), hn::Sub(hn::Set(d, 1.0f), y)); });
      return true;
    case BinaryOp::Expm1Backward:  // g (y + 1)
      Map2(out, g, x, n, stream, [](D d, V gv, V y) { return hn::Mul(gv, hn::Add(y, hn::Set(d, 1.0f))); });
      return true;
    case BinaryOp::Log1pBackward:  // g / (x + 1)
      Map2(out, g, x, n, stream, [](D d, V gv, V xv) { return hn::Div(gv, hn::Add(xv, hn::Set(d, 1.0f))); });
      return true;
    case BinaryOp::ErfBackward:
      Map2(out, g, x, n, stream, Inlined<ErfBackwardF>);
      return true;
    // x > 0 ? g : 0, as the op table's ReluBackward.
    case BinaryOp::ReluBackward:
      Map2(out, g, x, n, stream, [](D d, V gv, V xv) { return hn::IfThenElseZero(hn::Gt(xv, hn::Zero(d)), gv); });
      return true;
    // Arithmetic: one IEEE operation per element, the same result as the scalar loop.
    case BinaryOp::Add:
      Map2(out, g, x, n, stream, [](D, V a, V b) { return hn::Add(a, b); });
      return true;
    case BinaryOp::Sub:
      Map2(out, g, x, n, stream, [](D, V a, V b) { return hn::Sub(a, b); });
      return true;
    case BinaryOp::Mul:
      Map2(out, g, x, n, stream, [](D, V a, V b) { return hn::Mul(a, b); });
      return true;
    case BinaryOp::Div:
      Map2(out, g, x, n, stream, [](D, V a, V b) { return hn::Div(a, b); });
      return true;
    default:
      return false;
  }
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace anvil::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstdlib>
#include <string>

namespace anvil::cpu::vec {

HWY_EXPORT(Unary);
HWY_EXPORT(Binary);
HWY_EXPORT(TargetName);

bool enabled() {
  static const bool on = [] {
    const char* e = std::getenv("ANVIL_CPU_VECTOR");
    return !(e && std::string(e) == "off");
  }();
  return on;
}

std::string target() {
  const std::string version =
      std::to_string(HWY_MAJOR) + "." + std::to_string(HWY_MINOR) + "." + std::to_string(HWY_PATCH);
  if (!enabled()) return "off (ANVIL_CPU_VECTOR=off: scalar loops; Highway " + version + " built in)";
  return std::string(HWY_DYNAMIC_DISPATCH(TargetName)()) + " (Highway " + version + ", runtime dispatch)";
}

bool unary(UnaryOp op, const UnaryParams& p, float* out, const float* in, int64_t n, bool stream) {
  if (!enabled()) return false;
  return HWY_DYNAMIC_DISPATCH(Unary)(op, static_cast<float>(p.beta), static_cast<float>(p.threshold), out, in, n,
                                     stream);
}
bool has_unary(UnaryOp op) {
  switch (op) {
    case UnaryOp::Exp:
    case UnaryOp::Expm1:
    case UnaryOp::Log:
    case UnaryOp::Log1p:
    case UnaryOp::Tanh:
    case UnaryOp::Sigmoid:
    case UnaryOp::Erf:
    case UnaryOp::GeluTanh:
    case UnaryOp::GeluErf:
    case UnaryOp::Silu:
    case UnaryOp::Softplus:
    case UnaryOp::Relu:
      return true;
    default:
      return false;
  }
}
bool binary(BinaryOp op, float* out, const float* g, const float* x, int64_t n, bool stream) {
  if (!enabled()) return false;
  return HWY_DYNAMIC_DISPATCH(Binary)(op, out, g, x, n, stream);
}
bool has_binary(BinaryOp op) {
  switch (op) {
    case BinaryOp::GeluTanhBackward:
    case BinaryOp::GeluErfBackward:
    case BinaryOp::SiluBackward:
    case BinaryOp::SoftplusBackward:
    case BinaryOp::ReluBackward:
    case BinaryOp::TanhBackward:
    case BinaryOp::SigmoidBackward:
    case BinaryOp::ErfBackward:
    case BinaryOp::Expm1Backward:
    case BinaryOp::Log1pBackward:
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul:
    case BinaryOp::Div:
      return true;
    default:
      return false;
  }
}

}  // namespace anvil::cpu::vec
#endif  // HWY_ONCE

#else  // !ANVIL_HAVE_HIGHWAY

namespace anvil::cpu::vec {
std::string target() { return "none (built without Highway: scalar loops)"; }
bool enabled() { return false; }
bool unary(UnaryOp, const UnaryParams&, float*, const float*, int64_t, bool) { return false; }
bool has_unary(UnaryOp) { return false; }
bool binary(BinaryOp, float*, const float*, const float*, int64_t, bool) { return false; }
bool has_binary(BinaryOp) { return false; }
}  // namespace anvil::cpu::vec

#endif  // ANVIL_HAVE_HIGHWAY
