#pragma once
// One functor per BinaryOp, mirroring kernels/cpu/elementwise.cpp exactly
// (see unary_functors.cuh for Domain and kBool). Device-only header.
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device/dtype.cuh"
#include "kernels/cuda/device/unary_functors.cuh"

namespace anvil::cuda::dev {

#define ANVIL_BINARY_FUNCTOR(Name, dom, is_bool, expr)                                       \
  struct Name {                                                                             \
    static constexpr Domain domain = Domain::dom;                                           \
    static constexpr bool kBool = is_bool;                                                  \
    template <class C> __device__ __forceinline__ auto operator()(C a, C b) const { expr } \
  };

ANVIL_BINARY_FUNCTOR(AddF, Any, false, if constexpr (std::is_same_v<C, bool>) return a || b; else return C(a + b);)
ANVIL_BINARY_FUNCTOR(SubF, Numeric, false, return C(a - b);)
ANVIL_BINARY_FUNCTOR(MulF, Any, false, if constexpr (std::is_same_v<C, bool>) return a && b; else return C(a * b);)
ANVIL_BINARY_FUNCTOR(DivF, Floating, false, return C(a / b);)
ANVIL_BINARY_FUNCTOR(PowF, Floating, false, return C(pow(a, b));)
ANVIL_BINARY_FUNCTOR(MaximumF, Any, false, return nan_max(a, b);)
ANVIL_BINARY_FUNCTOR(MinimumF, Any, false, return nan_min(a, b);)
ANVIL_BINARY_FUNCTOR(EqF, Any, true, return a == b;)
ANVIL_BINARY_FUNCTOR(NeF, Any, true, return a != b;)
ANVIL_BINARY_FUNCTOR(LtF, Any, true, return a < b;)
ANVIL_BINARY_FUNCTOR(LeF, Any, true, return a <= b;)
ANVIL_BINARY_FUNCTOR(GtF, Any, true, return a > b;)
ANVIL_BINARY_FUNCTOR(GeF, Any, true, return a >= b;)
ANVIL_BINARY_FUNCTOR(LogicalAndF, Any, true, return (a != C(0)) & (b != C(0));)
ANVIL_BINARY_FUNCTOR(LogicalOrF, Any, true, return (a != C(0)) | (b != C(0));)
// Fused gradients: g is the incoming gradient, x the saved input, y the saved output.
ANVIL_BINARY_FUNCTOR(ReluBackwardF, Floating, false, return b > C(0) ? a : C(0);)  // a = g, b = x
ANVIL_BINARY_FUNCTOR(SigmoidBackwardF, Floating, false, return C(a * b * (C(1) - b));)
ANVIL_BINARY_FUNCTOR(TanhBackwardF, Floating, false, return C(a * (C(1) - b * b));)

#undef ANVIL_BINARY_FUNCTOR

struct GeluTanhBackwardF {
  static constexpr Domain domain = Domain::Floating;
  static constexpr bool kBool = false;
  template <class C> __device__ __forceinline__ C operator()(C g, C x) const {
    const C x2 = x * x;
    const C t = tanh(C(kSqrt2OverPi) * (x + C(kGeluCoeff) * x2 * x));
    const C dinner = C(kSqrt2OverPi) * (C(1) + C(3 * kGeluCoeff) * x2);
    return g * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * dinner);
  }
};
struct GeluErfBackwardF {
  static constexpr Domain domain = Domain::Floating;
  static constexpr bool kBool = false;
  template <class C> __device__ __forceinline__ C operator()(C g, C x) const {
    const C cdf = C(0.5) * (C(1) + erf(x * C(kInvSqrt2)));
    const C pdf = C(kInvSqrt2Pi) * exp(C(-0.5) * x * x);
    return g * (cdf + x * pdf);
  }
};
struct SiluBackwardF {
  static constexpr Domain domain = Domain::Floating;
  static constexpr bool kBool = false;
  template <class C> __device__ __forceinline__ C operator()(C g, C x) const {
    const C s = C(1) / (C(1) + exp(-x));
    return g * s * (C(1) + x * (C(1) - s));
  }
};

// Integer (and bool) division is true division computed in double, as on the
// CPU; the output is floating.
template <typename Out>
struct IntTrueDivF {
  template <class T> __device__ __forceinline__ Out operator()(T a, T b) const {
    return cast<Out>(static_cast<double>(a) / static_cast<double>(b));
  }
};

// out = Out(op(C(a), C(b))).
template <typename T, typename Out, typename Op>
struct BinaryMap {
  Op op;
  __device__ __forceinline__ Out operator()(T a, T b) const {
    return cast<Out>(op(cast<compute_t<T>>(a), cast<compute_t<T>>(b)));
  }
};

}  // namespace anvil::cuda::dev
