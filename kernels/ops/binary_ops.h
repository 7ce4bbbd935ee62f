#pragma once
// The binary elementwise ops, each declared once: a row of ANVIL_BINARY_OPS
// and its functor below (the unary table, unary_ops.h, explains the pattern).
// From them come the enum BinaryOp, the op names in errors, which dtypes each
// op accepts and its result dtype, the CPU kernel (kernels/cpu/elementwise.cpp)
// and the CUDA kernels (kernels/cuda/binary.cu, compare.cu and
// binary_backward.cu, one per Family so no file takes long to compile).
//
// A row is X(Enum, name, Domain, Result, Family):
//   name      the op's name in errors
//   Domain    Floating, Numeric, Any or Integral (op_traits.h); both inputs have one dtype
//   Result    Same (the inputs' dtype) or Bool
//   Family    Arithmetic, Compare, or ActivationBackward (the fused gradients
//             core's activations use: a = the incoming gradient, b = the saved
//             input x, or the saved output y where the row says so)
//
// Integer division is true division (PyTorch's): integer inputs with a
// floating output, computed in double. That one case is not a functor: both
// backends handle it before the table's dispatch.
#include <cstdint>
#include <iterator>
#include <type_traits>

#include "core/base/host_device.h"
#include "kernels/ops/math.h"
#include "kernels/ops/op_traits.h"

#define ANVIL_BINARY_OPS(X) \
  X(Add, add, Any, Same, Arithmetic) \
  X(Sub, sub, Numeric, Same, Arithmetic) \
  X(Mul, mul, Any, Same, Arithmetic) \
  X(Div, div, Floating, Same, Arithmetic) \
  X(Pow, pow, Floating, Same, Arithmetic) \
  X(Maximum, maximum, Any, Same, Arithmetic) \
  X(Minimum, minimum, Any, Same, Arithmetic) \
  X(BitwiseAnd, bitwise_and, Integral, Same, Arithmetic) \
  X(BitwiseOr, bitwise_or, Integral, Same, Arithmetic) \
  X(BitwiseXor, bitwise_xor, Integral, Same, Arithmetic) \
  X(Eq, eq, Any, Bool, Compare) \
  X(Ne, ne, Any, Bool, Compare) \
  X(Lt, lt, Any, Bool, Compare) \
  X(Le, le, Any, Bool, Compare) \
  X(Gt, gt, Any, Bool, Compare) \
  X(Ge, ge, Any, Bool, Compare) \
  X(LogicalAnd, logical_and, Any, Bool, Compare) \
  X(LogicalOr, logical_or, Any, Bool, Compare) \
  X(ReluBackward, relu_backward, Floating, Same, ActivationBackward) \
  X(GeluTanhBackward, gelu_tanh_backward, Floating, Same, ActivationBackward) \
  X(GeluErfBackward, gelu_erf_backward, Floating, Same, ActivationBackward) \
  X(SiluBackward, silu_backward, Floating, Same, ActivationBackward) \
  X(SigmoidBackward, sigmoid_backward, Floating, Same, ActivationBackward) \
  X(TanhBackward, tanh_backward, Floating, Same, ActivationBackward) \
  X(SoftplusBackward, softplus_backward, Floating, Same, ActivationBackward) \
  X(ErfBackward, erf_backward, Floating, Same, ActivationBackward) \
  X(Expm1Backward, expm1_backward, Floating, Same, ActivationBackward) \
  X(Log1pBackward, log1p_backward, Floating, Same, ActivationBackward) \
  X(Fmod, fmod, Numeric, Same, Arithmetic) \
  X(Remainder, remainder, Numeric, Same, Arithmetic)

namespace anvil {

#define ANVIL_BINARY_ENUM(Enum, name, domain, result, family) Enum,
enum class BinaryOp : uint8_t { ANVIL_BINARY_OPS(ANVIL_BINARY_ENUM) };
#undef ANVIL_BINARY_ENUM

namespace ops {

enum class BinaryFamily : uint8_t { Arithmetic, Compare, ActivationBackward };

struct BinaryOpInfo : OpInfo {
  BinaryFamily family;
};

#define ANVIL_BINARY_INFO(Enum, name, domain, result, family) \
  BinaryOpInfo{{#name, Domain::domain, Result::result}, BinaryFamily::family},
inline constexpr BinaryOpInfo kBinaryOps[] = {ANVIL_BINARY_OPS(ANVIL_BINARY_INFO)};
#undef ANVIL_BINARY_INFO
#define ANVIL_BINARY_ONE(...) +1
inline constexpr int kBinaryOpCount = 0 ANVIL_BINARY_OPS(ANVIL_BINARY_ONE);
#undef ANVIL_BINARY_ONE
static_assert(std::size(kBinaryOps) == kBinaryOpCount, "one BinaryOpInfo per BinaryOp");

constexpr const BinaryOpInfo& binary_info(BinaryOp op) { return kBinaryOps[static_cast<int>(op)]; }

// ---- the functors, in the table's order (compute type C, as unary_ops.h) ----

template <class C> struct Add {
  ANVIL_HD C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a || b;
    else
      return math::wrapping_add(a, b);
  }
};
template <class C> struct Sub {
  ANVIL_HD C operator()(C a, C b) const { return math::wrapping_add(a, math::wrapping_neg(b)); }
};
template <class C> struct Mul {
  ANVIL_HD C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a && b;
    else
      return math::wrapping_mul(a, b);
  }
};
template <class C> struct Div {
  ANVIL_HD C operator()(C a, C b) const { return a / b; }
};
template <class C> struct Pow {
  ANVIL_HD C operator()(C a, C b) const { return math::pow(a, b); }
};
// NaN propagates (from either side), as torch.maximum.
template <class C> struct Maximum {
  ANVIL_HD C operator()(C a, C b) const { return math::nan_max(a, b); }
};
template <class C> struct Minimum {
  ANVIL_HD C operator()(C a, C b) const { return math::nan_min(a, b); }
};
// On bool these are the logical ops (& and | of two bools is a bool), as in
// PyTorch; ints promote to int in C++, hence the casts back.
template <class C> struct BitwiseAnd {
  ANVIL_HD C operator()(C a, C b) const { return static_cast<C>(a & b); }
};
template <class C> struct BitwiseOr {
  ANVIL_HD C operator()(C a, C b) const { return static_cast<C>(a | b); }
};
template <class C> struct BitwiseXor {
  ANVIL_HD C operator()(C a, C b) const { return static_cast<C>(a ^ b); }
};
template <class C> struct Eq {
  ANVIL_HD bool operator()(C a, C b) const { return a == b; }
};
template <class C> struct Ne {
  ANVIL_HD bool operator()(C a, C b) const { return a != b; }
};
template <class C> struct Lt {
  ANVIL_HD bool operator()(C a, C b) const { return a < b; }
};
template <class C> struct Le {
  ANVIL_HD bool operator()(C a, C b) const { return a <= b; }
};
template <class C> struct Gt {
  ANVIL_HD bool operator()(C a, C b) const { return a > b; }
};
template <class C> struct Ge {
  ANVIL_HD bool operator()(C a, C b) const { return a >= b; }
};
template <class C> struct LogicalAnd {
  ANVIL_HD bool operator()(C a, C b) const { return (a != C(0)) & (b != C(0)); }
};
template <class C> struct LogicalOr {
  ANVIL_HD bool operator()(C a, C b) const { return (a != C(0)) | (b != C(0)); }
};
template <class C> struct ReluBackward {  // b = x
  ANVIL_HD C operator()(C g, C x) const { return x > C(0) ? g : C(0); }
};
template <class C> struct GeluTanhBackward {  // b = x
  ANVIL_HD C operator()(C g, C x) const {
    const C x2 = x * x;
    const C t = math::tanh(C(math::kSqrt2OverPi) * (x + C(math::kGeluCoeff) * x2 * x));
    const C dinner = C(math::kSqrt2OverPi) * (C(1) + C(3 * math::kGeluCoeff) * x2);
    // Where tanh has saturated the second term is 0, though x * dinner may be
    // infinite there (|x| near float's max): 0 * inf would make it NaN.
    const C sech2 = C(1) - t * t;
    return g * (C(0.5) * (C(1) + t) + (sech2 == C(0) ? C(0) : C(0.5) * x * sech2 * dinner));
  }
};
template <class C> struct GeluErfBackward {  // b = x
  ANVIL_HD C operator()(C g, C x) const {
    const C cdf = C(0.5) * (C(1) + math::erf(x * C(math::kInvSqrt2)));
    const C pdf = C(math::kInvSqrt2Pi) * math::exp(C(-0.5) * x * x);
    return g * (cdf + x * pdf);
  }
};
template <class C> struct SiluBackward {  // b = x
  ANVIL_HD C operator()(C g, C x) const {
    const C s = C(1) / (C(1) + math::exp(-x));
    return g * s * (C(1) + x * (C(1) - s));
  }
};
template <class C> struct SigmoidBackward {  // b = y
  ANVIL_HD C operator()(C g, C y) const { return g * y * (C(1) - y); }
};
template <class C> struct TanhBackward {  // b = y
  ANVIL_HD C operator()(C g, C y) const { return g * (C(1) - y * y); }
};
// softplus's gradient at its default parameters (beta 1, threshold 20, as
// PyTorch's): g past the threshold, where softplus is x, else g * sigmoid(x).
// core's softplus composes it from ops for other parameters.
template <class C> struct SoftplusBackward {  // b = x
  ANVIL_HD C operator()(C g, C x) const { return x > C(20) ? g : g / (C(1) + math::exp(-x)); }
};
// The gradients of erf, expm1 and log1p in one pass over g and the saved
// tensor, where composing them from ops (exp(-x^2) * c * g; (y + 1) * g;
// g / (x + 1)) costs a pass over memory per op.
template <class C> struct ErfBackward {  // b = x: g * 2 / sqrt(pi) * exp(-x^2)
  // The slope first: it is at most 1.13, so g times it overflows only where the true result does.
  ANVIL_HD C operator()(C g, C x) const { return g * (C(math::kTwoOverSqrtPi) * math::exp(-(x * x))); }
};
template <class C> struct Expm1Backward {  // b = y: g * (y + 1), as exp(x) = expm1(x) + 1
  ANVIL_HD C operator()(C g, C y) const { return g * (y + C(1)); }
};
template <class C> struct Log1pBackward {  // b = x: g / (x + 1)
  ANVIL_HD C operator()(C g, C x) const { return g / (x + C(1)); }
};
// The remainders of a / b: fmod's takes the dividend's sign (C's %),
// remainder's the divisor's (Python's %), as PyTorch's. An integer divisor of
// 0 gives 0 here, where PyTorch's CPU raises and its GPU gives garbage: a
// functor cannot raise, and C++'s x % 0 is undefined. x % -1 is 0 for every
// x (C++'s INT_MIN % -1 is undefined too).
template <class C> ANVIL_HD C truncated_remainder(C a, C b) {
  if constexpr (std::is_floating_point_v<C>)
    return math::fmod(a, b);
  else if constexpr (std::is_signed_v<C>)
    return b == C(0) || b == C(-1) ? C(0) : C(a % b);
  else
    return b == C(0) ? C(0) : C(a % b);
}
template <class C> struct Fmod {
  ANVIL_HD C operator()(C a, C b) const { return truncated_remainder(a, b); }
};
template <class C> struct Remainder {
  ANVIL_HD C operator()(C a, C b) const {
    const C r = truncated_remainder(a, b);
    if constexpr (std::is_unsigned_v<C>)
      return r;
    else
      return r != C(0) && ((r < C(0)) != (b < C(0))) ? C(r + b) : r;
  }
};

}  // namespace ops
}  // namespace anvil
