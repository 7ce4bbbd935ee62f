#pragma once
/// @file
/// The unary elementwise ops, each declared once: a row of ANVIL_UNARY_OPS and
/// its functor below. Everything else comes from these two: the enum UnaryOp,
/// the op names in errors, which dtypes each op accepts and its result dtype,
/// the CPU kernel (kernels/cpu/elementwise.cpp), the CUDA kernel
/// (kernels/cuda/unary_floating.cu and unary_integral.cu, also run on the emulated GPU), core's public
/// functions (core/ops/elementwise.h) and the tests' sweep over every op.
///
/// Adding a unary op takes two edits: its row and functor here, and its
/// gradient in core/ops/elementwise.cpp (a missing gradient fails to link);
/// a third where the functor calls a libm function math.h does not wrap yet
/// (CONTRIBUTING.md has the whole recipe).
///
/// A row is X(Enum, function, Domain, Result, Api):
///
///     function  the public function's name (anvil::function(x)) and the op's name in errors
///     Domain    Floating (float dtypes; core computes integer inputs in float32),
///               Numeric (also integers), Any (also bool) or Integral (integers
///               and bool only: core refuses float inputs)             (op_traits.h)
///     Result    Same (the input's dtype) or Bool
///     Api       Plain: core declares `Tensor function(const Tensor&)` with its gradient.
///               Custom: core writes the entry point by hand (it takes more arguments).
///
/// A functor is a template on the compute type C (float for float16 and
/// bfloat16, else the dtype's own type) whose operator() is ANVIL_HD, so the
/// same code is the CPU's, the GPU's and the emulated GPU's math. Functors that
/// need UnaryParams take them in a (host-side) constructor.
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>

#include "core/base/host_device.h"
#include "kernels/ops/math.h"
#include "kernels/ops/op_traits.h"

/// The unary op table: one X(Enum, function, Domain, Result, Api) row per op (see the file comment).
#define ANVIL_UNARY_OPS(X) \
  X(Neg, neg, Numeric, Same, Plain) \
  X(Abs, abs, Numeric, Same, Plain) \
  X(Exp, exp, Floating, Same, Plain) \
  X(Expm1, expm1, Floating, Same, Plain) \
  X(Log, log, Floating, Same, Plain) \
  X(Log1p, log1p, Floating, Same, Plain) \
  X(Sqrt, sqrt, Floating, Same, Plain) \
  X(Rsqrt, rsqrt, Floating, Same, Plain) \
  X(Sin, sin, Floating, Same, Plain) \
  X(Cos, cos, Floating, Same, Plain) \
  X(Tanh, tanh, Floating, Same, Plain) \
  X(Sigmoid, sigmoid, Floating, Same, Plain) \
  X(Relu, relu, Numeric, Same, Plain) \
  X(GeluTanh, gelu_tanh, Floating, Same, Custom) \
  X(GeluErf, gelu_erf, Floating, Same, Custom) \
  X(Silu, silu, Floating, Same, Plain) \
  X(Erf, erf, Floating, Same, Plain) \
  X(Sign, sign, Numeric, Same, Plain) \
  X(Reciprocal, reciprocal, Floating, Same, Plain) \
  X(Square, square, Numeric, Same, Plain) \
  X(Floor, floor, Numeric, Same, Plain) \
  X(Ceil, ceil, Numeric, Same, Plain) \
  X(Round, round, Numeric, Same, Plain) \
  X(IsNan, isnan, Numeric, Bool, Plain) \
  X(LogicalNot, logical_not, Any, Bool, Plain) \
  X(BitwiseNot, bitwise_not, Integral, Same, Plain) \
  X(Clamp, clamp, Numeric, Same, Custom) \
  X(Erfinv, erfinv, Floating, Same, Plain) \
  X(Trunc, trunc, Numeric, Same, Plain) \
  X(IsInf, isinf, Any, Bool, Plain) \
  X(IsFinite, isfinite, Any, Bool, Plain) \
  X(LeakyRelu, leaky_relu, Floating, Same, Custom) \
  X(Elu, elu, Floating, Same, Custom) \
  X(Softplus, softplus, Floating, Same, Custom) \
  X(Mish, mish, Floating, Same, Plain) \
  X(Hardswish, hardswish, Floating, Same, Plain) \
  X(Atan, atan, Floating, Same, Plain) \
  X(Log2, log2, Floating, Same, Plain)

namespace anvil {

#define ANVIL_UNARY_ENUM(Enum, function, domain, result, api) Enum,
/// One enumerator per row of ANVIL_UNARY_OPS, in the table's order.
enum class UnaryOp : uint8_t { ANVIL_UNARY_OPS(ANVIL_UNARY_ENUM) };
#undef ANVIL_UNARY_ENUM

/// The parameters of the table's parametrised rows (Clamp and the activations).
struct UnaryParams {
  ///@{
  /// Clamp's bounds (either may be +-inf)
  double lo = 0, hi = 0;
  ///@}
  /// The activations' parameters, with PyTorch's defaults.
  double negative_slope = 0.01;  ///< LeakyRelu
  double alpha = 1.0;  ///< Elu
  ///@{
  /// Softplus: log1p(exp(beta x)) / beta, x where beta x > threshold
  double beta = 1.0, threshold = 20;
  ///@}
};

namespace ops {

#define ANVIL_UNARY_INFO(Enum, function, domain, result, api) {#function, Domain::domain, Result::result},
inline constexpr OpInfo kUnaryOps[] = {ANVIL_UNARY_OPS(ANVIL_UNARY_INFO)};
#undef ANVIL_UNARY_INFO
#define ANVIL_UNARY_ONE(...) +1
inline constexpr int kUnaryOpCount = 0 ANVIL_UNARY_OPS(ANVIL_UNARY_ONE);
#undef ANVIL_UNARY_ONE
static_assert(std::size(kUnaryOps) == kUnaryOpCount, "one OpInfo per UnaryOp");

constexpr const OpInfo& unary_info(UnaryOp op) { return kUnaryOps[static_cast<int>(op)]; }

// ---- the functors, in the table's order ----

template <class C> struct Neg {
  ANVIL_HD C operator()(C x) const { return math::wrapping_neg(x); }
};
template <class C> struct Abs {
  ANVIL_HD C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return math::fabs(x);
    else if constexpr (std::is_unsigned_v<C>)
      return x;
    else
      return x < C(0) ? math::wrapping_neg(x) : x;
  }
};
template <class C> struct Exp {
  ANVIL_HD C operator()(C x) const { return math::exp(x); }
};
template <class C> struct Expm1 {
  ANVIL_HD C operator()(C x) const { return math::expm1(x); }
};
template <class C> struct Log {
  ANVIL_HD C operator()(C x) const { return math::log(x); }
};
template <class C> struct Log1p {
  ANVIL_HD C operator()(C x) const { return math::log1p(x); }
};
template <class C> struct Sqrt {
  ANVIL_HD C operator()(C x) const { return math::sqrt(x); }
};
template <class C> struct Rsqrt {
  ANVIL_HD C operator()(C x) const { return C(1) / math::sqrt(x); }
};
template <class C> struct Sin {
  ANVIL_HD C operator()(C x) const { return math::sin(x); }
};
template <class C> struct Cos {
  ANVIL_HD C operator()(C x) const { return math::cos(x); }
};
template <class C> struct Tanh {
  ANVIL_HD C operator()(C x) const { return math::tanh(x); }
};
template <class C> struct Sigmoid {
  ANVIL_HD C operator()(C x) const { return C(1) / (C(1) + math::exp(-x)); }
};
/// NaN stays NaN
template <class C> struct Relu {
  ANVIL_HD C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>)
      return x;
    else
      return x < C(0) ? C(0) : x;
  }
};
template <class C> struct GeluTanh {
  ANVIL_HD C operator()(C x) const {
    return C(0.5) * x * (C(1) + math::tanh(C(math::kSqrt2OverPi) * (x + C(math::kGeluCoeff) * x * x * x)));
  }
};
template <class C> struct GeluErf {
  ANVIL_HD C operator()(C x) const { return C(0.5) * x * (C(1) + math::erf(x * C(math::kInvSqrt2))); }
};
template <class C> struct Silu {
  ANVIL_HD C operator()(C x) const { return x / (C(1) + math::exp(-x)); }
};
template <class C> struct Erf {
  ANVIL_HD C operator()(C x) const { return math::erf(x); }
};
template <class C> struct Sign {
  ANVIL_HD C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>)
      return C(x != C(0));
    else
      return C((C(0) < x) - (x < C(0)));  // 0 for NaN
  }
};
template <class C> struct Reciprocal {
  ANVIL_HD C operator()(C x) const { return C(1) / x; }
};
template <class C> struct Square {
  ANVIL_HD C operator()(C x) const { return math::wrapping_mul(x, x); }
};
/// floor, ceil and round leave integers as they are (as PyTorch does).
template <class C> struct Floor {
  ANVIL_HD C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return math::floor(x);
    else
      return x;
  }
};
template <class C> struct Ceil {
  ANVIL_HD C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return math::ceil(x);
    else
      return x;
  }
};
/// half to even, as torch.round
template <class C> struct Round {
  ANVIL_HD C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return math::nearbyint(x);
    else
      return x;
  }
};
template <class C> struct IsNan {
  ANVIL_HD bool operator()(C x) const { return math::isnan(x); }
};
template <class C> struct LogicalNot {
  ANVIL_HD bool operator()(C x) const { return x == C(0); }
};
/// on bool the logical not, as torch.bitwise_not
template <class C> struct BitwiseNot {
  ANVIL_HD C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>)
      return !x;
    else
      return static_cast<C>(~x);  // ~ promotes uint8 to int: cast back
  }
};
/// min(max(x, lo), hi) as PyTorch: NaN stays NaN, lo > hi gives hi. The
/// bounds arrive as doubles (possibly infinite): floats keep them, integers
/// saturate them to their range.
template <class C> struct Clamp {
  C lo, hi;
  explicit Clamp(const UnaryParams& p) : lo(bound(p.lo)), hi(bound(p.hi)) {}
  static C bound(double v) {
    if constexpr (std::is_floating_point_v<C>) {
      return static_cast<C>(v);
    } else {
      using L = std::numeric_limits<C>;
      return v <= double(L::lowest()) ? L::lowest() : v >= double(L::max()) ? L::max() : static_cast<C>(v);
    }
  }
  ANVIL_HD C operator()(C x) const {
    const C m = x < lo ? lo : x;
    return hi < m ? hi : m;
  }
};

template <class C> struct Erfinv {
  ANVIL_HD C operator()(C x) const { return math::erfinv(x); }
};
/// integers unchanged, as torch.trunc
template <class C> struct Trunc {
  ANVIL_HD C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return math::trunc(x);
    else
      return x;
  }
};
template <class C> struct IsInf {
  ANVIL_HD bool operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return math::isinf(x);
    else
      return false;
  }
};
/// neither NaN nor +-inf
template <class C> struct IsFinite {
  ANVIL_HD bool operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return !math::isnan(x) && !math::isinf(x);
    else
      return true;
  }
};
/// The parametrised activations take their parameter in the compute type (a
/// float for float16, as PyTorch computes them). NaN stays NaN: every
/// comparison with it is false, which picks the branch that carries x.
template <class C> struct LeakyRelu {
  C slope;
  explicit LeakyRelu(const UnaryParams& p) : slope(static_cast<C>(p.negative_slope)) {}
  ANVIL_HD C operator()(C x) const { return x < C(0) ? x * slope : x; }
};
template <class C> struct Elu {
  C alpha;
  explicit Elu(const UnaryParams& p) : alpha(static_cast<C>(p.alpha)) {}
  ANVIL_HD C operator()(C x) const { return x > C(0) ? x : alpha * math::expm1(x); }
};
template <class C> struct Softplus {
  C beta, threshold;
  explicit Softplus(const UnaryParams& p) : beta(static_cast<C>(p.beta)), threshold(static_cast<C>(p.threshold)) {}
  ANVIL_HD C operator()(C x) const {
    const C bx = x * beta;
    return bx > threshold ? x : math::log1p(math::exp(bx)) / beta;
  }
};
/// softplus as above with beta 1, threshold 20; then x * tanh of it.
template <class C> struct Mish {
  ANVIL_HD C operator()(C x) const {
    const C sp = x > C(20) ? x : math::log1p(math::exp(x));
    return x * math::tanh(sp);
  }
};
/// x * relu6(x + 3) / 6
template <class C> struct Hardswish {
  ANVIL_HD C operator()(C x) const {
    if (x <= C(-3)) return x * C(0);  // -0 (and NaN at -inf), as PyTorch's formula
    if (x >= C(3)) return x;
    return x * (x + C(3)) / C(6);
  }
};
template <class C> struct Atan {
  ANVIL_HD C operator()(C x) const { return math::atan(x); }
};
/// exact at powers of two, unlike log(x) / log(2)
template <class C> struct Log2 {
  ANVIL_HD C operator()(C x) const { return math::log2(x); }
};

/// The functor of op F in compute type C, given the call's params (host side).
template <template <class> class F, class C> F<C> make_unary(const UnaryParams& p) {
  if constexpr (std::is_constructible_v<F<C>, const UnaryParams&>)
    return F<C>(p);
  else
    return F<C>{};
}

}  // namespace ops
}  // namespace anvil
