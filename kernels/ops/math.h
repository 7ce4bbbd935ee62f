#pragma once
/// @file
/// The math functions the op tables' functors call, for host and device alike:
/// std:: on the host (and on the emulated GPU, which compiles kernels as C++),
/// CUDA's overloads in device code (float stays float: expf, not exp).
#include <cmath>
#include <type_traits>

#include "core/base/host_device.h"

namespace anvil::ops::math {

#if defined(__CUDA_ARCH__)
#define ANVIL_OPS_MATH_1(fn) \
  template <class C> ANVIL_HD C fn(C x) { return ::fn(x); }
#define ANVIL_OPS_MATH_2(fn) \
  template <class C> ANVIL_HD C fn(C x, C y) { return ::fn(x, y); }
#else
#define ANVIL_OPS_MATH_1(fn) \
  template <class C> ANVIL_HD C fn(C x) { return std::fn(x); }
#define ANVIL_OPS_MATH_2(fn) \
  template <class C> ANVIL_HD C fn(C x, C y) { return std::fn(x, y); }
#endif

ANVIL_OPS_MATH_1(exp)
ANVIL_OPS_MATH_1(expm1)
ANVIL_OPS_MATH_1(log)
ANVIL_OPS_MATH_1(log1p)
ANVIL_OPS_MATH_1(log2)
ANVIL_OPS_MATH_1(sqrt)
ANVIL_OPS_MATH_1(sin)
ANVIL_OPS_MATH_1(cos)
ANVIL_OPS_MATH_1(tanh)
ANVIL_OPS_MATH_1(atan)
ANVIL_OPS_MATH_1(erf)
ANVIL_OPS_MATH_1(fabs)
ANVIL_OPS_MATH_1(floor)
ANVIL_OPS_MATH_1(ceil)
ANVIL_OPS_MATH_1(trunc)
ANVIL_OPS_MATH_1(erfc)
ANVIL_OPS_MATH_1(nearbyint)  // rounds half to even in the default rounding mode, as torch.round
ANVIL_OPS_MATH_2(pow)
ANVIL_OPS_MATH_2(fmod)

#undef ANVIL_OPS_MATH_1
#undef ANVIL_OPS_MATH_2

// Integer negation and products wrap around, as in PyTorch, instead of being
// undefined behaviour on signed overflow (-INT_MIN, a large square): the
// arithmetic is done in the unsigned type, and C++20 defines the conversion back.
template <class C> ANVIL_HD C wrapping_neg(C x) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return C(-static_cast<std::make_unsigned_t<C>>(x));
  else
    return C(-x);
}
template <class C> ANVIL_HD C wrapping_add(C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    return C(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return C(a + b);
  }
}
template <class C> ANVIL_HD C wrapping_mul(C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
    using U = std::make_unsigned_t<C>;
    return C(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return C(a * b);
  }
}

template <class C> ANVIL_HD bool isnan(C x) {
  return x != x;  // false for integers
}
template <class C> ANVIL_HD bool isinf(C x) {
  return x == x && (x - x) != (x - x);  // inf - inf is NaN; false for integers and NaN
}

/// NaN-propagating max and min, as torch.maximum: a NaN on either side wins.
template <class C> ANVIL_HD C nan_max(C a, C b) { return isnan(a) ? a : (isnan(b) || b > a) ? b : a; }
template <class C> ANVIL_HD C nan_min(C a, C b) { return isnan(a) ? a : (isnan(b) || b < a) ? b : a; }

/// The inverse error function. CUDA has one; the C++ library has none, so the
/// host (and the emulated GPU) computes it in double whatever C is: Giles'
/// single-precision approximation as the start, then Newton steps on
/// erf(x) = y, with the residual taken through erfc where |y| is near 1 (there
/// 1 - |y| is exact and erf(x) would have rounded to 1).
inline double erfinv_host(double y) {
  if (!(y > -1.0 && y < 1.0)) {
    if (y == 1.0) return HUGE_VAL;
    if (y == -1.0) return -HUGE_VAL;
    return std::nan("");  // |y| > 1 and NaN
  }
  if (y == 0.0) return y;  // keeps -0
  double w = -std::log((1.0 - y) * (1.0 + y)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  const double a = std::fabs(y);
  double x = p * a;  // solve for |y|, then give x y's sign
  for (int i = 0; i < 3; ++i) {
    const double residual = a > 0.5 ? (1.0 - a) - std::erfc(x) : std::erf(x) - a;  // both erf(x) - a
    const double slope = 1.1283791670955126 * std::exp(-x * x);  // 2 / sqrt(pi) exp(-x^2)
    if (slope == 0.0) break;
    x -= residual / slope;
  }
  return y < 0 ? -x : x;
}

template <class C> ANVIL_HD C erfinv(C y) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<C, float>)
    return ::erfinvf(y);
  else
    return ::erfinv(y);
#else
  return static_cast<C>(erfinv_host(static_cast<double>(y)));
#endif
}

/// GELU's constants, written once for the forward functors and the fused backwards.
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;  ///< sqrt(2 / pi)
inline constexpr double kGeluCoeff = 0.044715;
inline constexpr double kInvSqrt2 = 0.70710678118654752440;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;  ///< 1 / sqrt(2 pi)
inline constexpr double kTwoOverSqrtPi = 1.12837916709551257390;  ///< 2 / sqrt(pi), erf's slope at 0

}  // namespace anvil::ops::math
