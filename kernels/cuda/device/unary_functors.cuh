#pragma once
// One functor per UnaryOp, mirroring kernels/cpu/elementwise.cpp exactly.
// Each functor computes in C = compute_t<T> (float for 16-bit floats) and
// says which dtypes it accepts (domain) and whether its result is bool
// (kBool). Device-only header.
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device/dtype.cuh"

namespace anvil::cuda::dev {

// Floating: float dtypes only. Numeric: also integers. Any: also bool.
enum class Domain { Floating, Numeric, Any };

template <typename T>
constexpr bool accepts(Domain d) {
  if constexpr (std::is_same_v<T, bool>) return d == Domain::Any;
  else if constexpr (std::is_integral_v<T>) return d != Domain::Floating;
  else return true;
}

inline constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
inline constexpr double kGeluCoeff = 0.044715;
inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)

#define ANVIL_UNARY_FUNCTOR(Name, dom, is_bool, expr)                                  \
  struct Name {                                                                       \
    static constexpr Domain domain = Domain::dom;                                     \
    static constexpr bool kBool = is_bool;                                            \
    template <class C> __device__ __forceinline__ auto operator()(C x) const { expr } \
  };

ANVIL_UNARY_FUNCTOR(NegF, Numeric, false, return C(-x);)
ANVIL_UNARY_FUNCTOR(AbsF, Numeric, false, if constexpr (std::is_floating_point_v<C>) return C(fabs(x)); else if constexpr (std::is_unsigned_v<C>) return x; else return x < C(0) ? C(-x) : x;)
ANVIL_UNARY_FUNCTOR(ExpF, Floating, false, return C(exp(x));)
ANVIL_UNARY_FUNCTOR(LogF, Floating, false, return C(log(x));)
ANVIL_UNARY_FUNCTOR(SqrtF, Floating, false, return C(sqrt(x));)
ANVIL_UNARY_FUNCTOR(RsqrtF, Floating, false, return C(C(1) / sqrt(x));)
ANVIL_UNARY_FUNCTOR(SinF, Floating, false, return C(sin(x));)
ANVIL_UNARY_FUNCTOR(CosF, Floating, false, return C(cos(x));)
ANVIL_UNARY_FUNCTOR(TanhF, Floating, false, return C(tanh(x));)
ANVIL_UNARY_FUNCTOR(SigmoidF, Floating, false, return C(C(1) / (C(1) + exp(-x)));)
ANVIL_UNARY_FUNCTOR(ReluF, Numeric, false, if constexpr (std::is_unsigned_v<C>) return x; else return x < C(0) ? C(0) : x;)  // NaN stays NaN
ANVIL_UNARY_FUNCTOR(GeluTanhF, Floating, false,
                    return C(C(0.5) * x * (C(1) + tanh(C(kSqrt2OverPi) * (x + C(kGeluCoeff) * x * x * x))));)
ANVIL_UNARY_FUNCTOR(GeluErfF, Floating, false, return C(C(0.5) * x * (C(1) + erf(x * C(kInvSqrt2))));)
ANVIL_UNARY_FUNCTOR(SiluF, Floating, false, return C(x / (C(1) + exp(-x)));)
ANVIL_UNARY_FUNCTOR(SignF, Numeric, false, if constexpr (std::is_unsigned_v<C>) return C(x != C(0)); else return C((C(0) < x) - (x < C(0)));)
ANVIL_UNARY_FUNCTOR(ReciprocalF, Floating, false, return C(C(1) / x);)
ANVIL_UNARY_FUNCTOR(SquareF, Numeric, false, return C(x * x);)
ANVIL_UNARY_FUNCTOR(LogicalNotF, Any, true, return x == C(0);)

#undef ANVIL_UNARY_FUNCTOR

// Bounds are converted on the host (clamp_bound below) to the compute type:
// infinite bounds stay infinite for floats and saturate for integers.
template <class C>
struct ClampF {
  static constexpr Domain domain = Domain::Numeric;
  static constexpr bool kBool = false;
  C lo, hi;
  __device__ __forceinline__ C operator()(C x) const {  // min(max(x, lo), hi): NaN stays NaN, lo > hi gives hi
    const C m = x < lo ? lo : x;
    return hi < m ? hi : m;
  }
};

// out = Out(op(C(x))): the conversion wrapper every unary launch uses.
template <typename T, typename Out, typename Op>
struct UnaryMap {
  Op op;
  __device__ __forceinline__ Out operator()(T x) const { return cast<Out>(op(cast<compute_t<T>>(x))); }
};

}  // namespace anvil::cuda::dev
