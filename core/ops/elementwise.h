#pragma once
/// @file
/// Elementwise ops with PyTorch broadcasting and type promotion.
#include <optional>

#include "core/tensor.h"
#include "kernels/ops/unary_ops.h"

namespace anvil {

/// One function per Plain row of the unary op table (kernels/ops/unary_ops.h):
/// neg, abs, exp, expm1, log, log1p, log2, sqrt, rsqrt, sin, cos, tanh, atan,
/// sigmoid, relu, silu, erf, sign, reciprocal, square, floor, ceil, round (half
/// to even), trunc, erfinv, mish, hardswish, isnan, isinf, isfinite and
/// logical_not (bool results), bitwise_not (integers and bool
/// only; on bool the logical not), each `Tensor f(const Tensor& x)`,
/// differentiable where the result is floating.
#define ANVIL_DECLARE_UNARY(Enum, function, domain, result, api) ANVIL_DECLARE_UNARY_##api(function)
#define ANVIL_DECLARE_UNARY_Plain(function) Tensor function(const Tensor& x);
#define ANVIL_DECLARE_UNARY_Custom(function)
ANVIL_UNARY_OPS(ANVIL_DECLARE_UNARY)
#undef ANVIL_DECLARE_UNARY
#undef ANVIL_DECLARE_UNARY_Plain
#undef ANVIL_DECLARE_UNARY_Custom

/// @fn Tensor neg(const Tensor& x)
/// -x (integers wrap around).

/// @fn Tensor abs(const Tensor& x)
/// |x| (integers wrap at the most negative value).

/// @fn Tensor exp(const Tensor& x)
/// e to the x.

/// @fn Tensor expm1(const Tensor& x)
/// exp(x) - 1, accurate near 0.

/// @fn Tensor log(const Tensor& x)
/// Natural logarithm.

/// @fn Tensor log1p(const Tensor& x)
/// log(1 + x), accurate near 0.

/// @fn Tensor sqrt(const Tensor& x)
/// Square root.

/// @fn Tensor rsqrt(const Tensor& x)
/// 1 / sqrt(x).

/// @fn Tensor sin(const Tensor& x)
/// Sine.

/// @fn Tensor cos(const Tensor& x)
/// Cosine.

/// @fn Tensor tanh(const Tensor& x)
/// Hyperbolic tangent.

/// @fn Tensor sigmoid(const Tensor& x)
/// 1 / (1 + exp(-x)).

/// @fn Tensor relu(const Tensor& x)
/// max(x, 0); NaN stays NaN.

/// @fn Tensor silu(const Tensor& x)
/// x * sigmoid(x) (swish).

/// @fn Tensor erf(const Tensor& x)
/// The error function.

/// @fn Tensor sign(const Tensor& x)
/// -1, 0 or 1 by the sign of x (0 for 0 and for NaN).

/// @fn Tensor reciprocal(const Tensor& x)
/// 1 / x.

/// @fn Tensor square(const Tensor& x)
/// x * x.

/// @fn Tensor floor(const Tensor& x)
/// Rounds down (integers unchanged).

/// @fn Tensor ceil(const Tensor& x)
/// Rounds up (integers unchanged).

/// @fn Tensor round(const Tensor& x)
/// Rounds to the nearest integer, half to even, as torch.round (integers unchanged).

/// @fn Tensor isnan(const Tensor& x)
/// Whether x is NaN, as bool.

/// @fn Tensor logical_not(const Tensor& x)
/// Whether x is zero, as bool (any dtype).

/// @fn Tensor bitwise_not(const Tensor& x)
/// ~x on integers; on bool the logical not (a floating x is an error).

/// @fn Tensor erfinv(const Tensor& x)
/// The inverse error function, on (-1, 1).

/// @fn Tensor trunc(const Tensor& x)
/// Rounds toward zero (integers unchanged).

/// @fn Tensor isinf(const Tensor& x)
/// Whether x is +inf or -inf, as bool.

/// @fn Tensor isfinite(const Tensor& x)
/// Whether x is neither NaN nor infinite, as bool.

/// @fn Tensor mish(const Tensor& x)
/// x * tanh(softplus(x)).

/// @fn Tensor hardswish(const Tensor& x)
/// x * relu6(x + 3) / 6.

/// @fn Tensor atan(const Tensor& x)
/// Arc tangent.

/// @fn Tensor log2(const Tensor& x)
/// Base-2 logarithm, exact at powers of two.

// The table's Custom rows, with their extra arguments.

/// gelu's form: the exact x * Phi(x) (erf) or PyTorch's tanh approximation.
enum class GeluApprox { None, Tanh };
/// x * Phi(x), Phi the standard normal CDF (exact), or its tanh approximation.
Tensor gelu(const Tensor& x, GeluApprox approx = GeluApprox::None);
/// An absent bound ({} or std::nullopt, as libtorch's) leaves that side open;
/// at least one is needed.
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi = std::nullopt);
Tensor clamp_min(const Tensor& x, double lo);  ///< clamp(x, lo, none).
Tensor clamp_max(const Tensor& x, double hi);  ///< clamp(x, none, hi).
/// The Clamp row's params for these bounds (absent ones infinite), or an error naming `op`.
UnaryParams clamp_bounds(const char* op, std::optional<double> lo, std::optional<double> hi);
Tensor pow(const Tensor& x, const Scalar& exponent);  ///< x to the power `exponent`, elementwise.
/// The parametrised activations, with PyTorch's defaults: x where x > 0, else
/// negative_slope * x; alpha * (exp(x) - 1) below 0; log(1 + exp(beta x)) / beta,
/// x itself where beta * x > threshold. (mish and hardswish are Plain rows.)
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);  ///< x where x > 0, else alpha * (exp(x) - 1).
/// log(1 + exp(beta x)) / beta, x itself where beta x > threshold.
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor pow(const Tensor& x, const Tensor& exponent);  ///< x to the power `exponent`, both broadcast.

Tensor add(const Tensor& a, const Tensor& b);  ///< a + b, broadcast, in the promoted dtype.
Tensor sub(const Tensor& a, const Tensor& b);  ///< a - b, broadcast, in the promoted dtype.
Tensor mul(const Tensor& a, const Tensor& b);  ///< a * b, broadcast, in the promoted dtype.
Tensor div(const Tensor& a, const Tensor& b);  ///< a / b, true division (integers divide in float32).
Tensor maximum(const Tensor& a, const Tensor& b);  ///< The larger of a and b, elementwise; NaN if either is.
Tensor minimum(const Tensor& a, const Tensor& b);  ///< The smaller of a and b, elementwise; NaN if either is.
Tensor add(const Tensor& a, const Scalar& b);  ///< a + b.
Tensor sub(const Tensor& a, const Scalar& b);  ///< a - b.
Tensor mul(const Tensor& a, const Scalar& b);  ///< a * b.
Tensor div(const Tensor& a, const Scalar& b);  ///< a / b, true division.
Tensor maximum(const Tensor& a, const Scalar& b);  ///< max(a, b), elementwise.
Tensor minimum(const Tensor& a, const Scalar& b);  ///< min(a, b), elementwise.
///@{
/// The remainder of a / b with the dividend's sign (fmod, C's %) or the
/// divisor's (remainder, Python's %), as PyTorch's; integers and floats. An
/// integer divisor of 0 gives 0 (PyTorch's CPU raises; a kernel cannot).
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Scalar& b);
Tensor remainder(const Tensor& a, const Scalar& b);
///@}
/// a + alpha * b and a - alpha * b, as torch.add / torch.sub with alpha.
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha);  ///< a - alpha * b.
/// self + value * t1 * t2, self + value * t1 / t2, and self + weight * (end - self).
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
/// self + value * t1 / t2.
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight);  ///< self + weight * (end - self).
/// self + weight * (end - self), with an elementwise weight.
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight);

/// Comparisons give bool tensors.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);  ///< a != b, as bool.
Tensor lt(const Tensor& a, const Tensor& b);  ///< a < b, as bool.
Tensor le(const Tensor& a, const Tensor& b);  ///< a <= b, as bool.
Tensor gt(const Tensor& a, const Tensor& b);  ///< a > b, as bool.
Tensor ge(const Tensor& a, const Tensor& b);  ///< a >= b, as bool.
Tensor eq(const Tensor& a, const Scalar& b);  ///< a == b, as bool.
Tensor ne(const Tensor& a, const Scalar& b);  ///< a != b, as bool.
Tensor lt(const Tensor& a, const Scalar& b);  ///< a < b, as bool.
Tensor le(const Tensor& a, const Scalar& b);  ///< a <= b, as bool.
Tensor gt(const Tensor& a, const Scalar& b);  ///< a > b, as bool.
Tensor ge(const Tensor& a, const Scalar& b);  ///< a >= b, as bool.
Tensor logical_and(const Tensor& a, const Tensor& b);  ///< Both non-zero, as bool.
Tensor logical_or(const Tensor& a, const Tensor& b);  ///< Either non-zero, as bool.

/// Integer and bool tensors only (a floating operand is an error); on bool
/// they are the logical ops. bitwise_not is a row of the unary table above.
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);  ///< a | b.
Tensor bitwise_xor(const Tensor& a, const Tensor& b);  ///< a ^ b.
Tensor bitwise_and(const Tensor& a, const Scalar& b);  ///< a & b.
Tensor bitwise_or(const Tensor& a, const Scalar& b);  ///< a | b.
Tensor bitwise_xor(const Tensor& a, const Scalar& b);  ///< a ^ b.

///@{
/// A scalar value takes the other value's dtype where its kind allows (as a
/// 0-d tensor does): where(c, x, 0.0) keeps a float32 x's dtype.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
///@}
/// x with `value` where the bool `mask` (broadcast) is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor cast(const Tensor& x, DType dtype);  ///< same as x.to(dtype); differentiable between float types

/// Whether an op may store a result of dtype `from` in a tensor of dtype `to`
/// (PyTorch's can_cast): any cast within a kind or up the order bool < integer
/// < floating, never from floating to integer or bool, nor integer to bool.
bool can_cast(DType from, DType to);

/// In place: the result (after type promotion) is stored in self's dtype, and
/// an error is raised where that would need a cast can_cast refuses (an int64
/// self with a floating other, or div_ of an integer self). Refused on leaves
/// that require grad.
Tensor& add_(Tensor& self, const Tensor& other);
Tensor& sub_(Tensor& self, const Tensor& other);  ///< self -= other.
Tensor& mul_(Tensor& self, const Tensor& other);  ///< self *= other.
Tensor& div_(Tensor& self, const Tensor& other);  ///< self /= other (a floating self only).
Tensor& add_(Tensor& self, const Scalar& other);  ///< self += other.
Tensor& sub_(Tensor& self, const Scalar& other);  ///< self -= other.
Tensor& mul_(Tensor& self, const Scalar& other);  ///< self *= other.
Tensor& div_(Tensor& self, const Scalar& other);  ///< self /= other (a floating self only).
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha);  ///< self += alpha * other.
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha);  ///< self -= alpha * other.
/// self += value * t1 * t2.
Tensor& addcmul_(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
/// self += value * t1 / t2.
Tensor& addcdiv_(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor& lerp_(Tensor& self, const Tensor& end, const Scalar& weight);  ///< self += weight * (end - self).
/// self += weight * (end - self), elementwise weight.
Tensor& lerp_(Tensor& self, const Tensor& end, const Tensor& weight);
Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Scalar& value);  ///< Writes `value` where `mask` is true.
/// Integer and bool selves only; a bool self takes bool others (as PyTorch's
/// can_cast: an int result is not stored in a bool).
Tensor& bitwise_and_(Tensor& self, const Tensor& other);
Tensor& bitwise_or_(Tensor& self, const Tensor& other);  ///< self |= other.
Tensor& bitwise_xor_(Tensor& self, const Tensor& other);  ///< self ^= other.
Tensor& bitwise_and_(Tensor& self, const Scalar& other);  ///< self &= other.
Tensor& bitwise_or_(Tensor& self, const Scalar& other);  ///< self |= other.
Tensor& bitwise_xor_(Tensor& self, const Scalar& other);  ///< self ^= other.

/// Broadcast shape of two shapes, or an error naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
/// Sums `grad` down to `shape` (the reverse of broadcasting).
Tensor sum_to(const Tensor& grad, const Shape& shape);

inline Tensor operator-(const Tensor& x) { return neg(x); }  ///< neg(x).
///@{
/// The arithmetic operators: add, sub, mul and div, with their broadcasting and
/// type promotion; a Scalar on either side.
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
inline Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
inline Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
///@}
///@{
/// In place: add_, sub_, mul_ and div_ (the result is stored in a's dtype).
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return add_(a, b); }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return sub_(a, b); }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return mul_(a, b); }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return div_(a, b); }
inline Tensor& operator+=(Tensor& a, const Scalar& b) { return add_(a, b); }
inline Tensor& operator-=(Tensor& a, const Scalar& b) { return sub_(a, b); }
inline Tensor& operator*=(Tensor& a, const Scalar& b) { return mul_(a, b); }
inline Tensor& operator/=(Tensor& a, const Scalar& b) { return div_(a, b); }
///@}

// Comparisons give bool tensors, as libtorch's: x > 0, 0 < x, x == y. A
// scalar on the left is the mirrored comparison (0 < x is x > 0).
#define ANVIL_COMPARISON_OPERATOR(op, function, mirrored) \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return function(a, b); } \
  inline Tensor operator op(const Tensor& a, const Scalar& b) { return function(a, b); } \
  inline Tensor operator op(const Scalar& a, const Tensor& b) { return mirrored(b, a); }
///@{
/// The comparisons eq, ne, lt, le, gt and ge as operators, with bool results: x > 0, 0 < x, x == y. A
/// scalar on the left is the mirrored comparison (0 < x is x > 0).
ANVIL_COMPARISON_OPERATOR(==, eq, eq)
ANVIL_COMPARISON_OPERATOR(!=, ne, ne)
ANVIL_COMPARISON_OPERATOR(<, lt, gt)
ANVIL_COMPARISON_OPERATOR(<=, le, ge)
ANVIL_COMPARISON_OPERATOR(>, gt, lt)
ANVIL_COMPARISON_OPERATOR(>=, ge, le)
///@}
#undef ANVIL_COMPARISON_OPERATOR

// Bitwise operators on integer and bool tensors (& | ^ of bools are the
// logical ops); ! is logical_not, with a bool result for any dtype.
#define ANVIL_BITWISE_OPERATOR(op, function) \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return function(a, b); } \
  inline Tensor operator op(const Tensor& a, const Scalar& b) { return function(a, b); } \
  inline Tensor operator op(const Scalar& a, const Tensor& b) { return function(b, a); }
///@{
/// bitwise_and, bitwise_or and bitwise_xor as operators, on integer and bool tensors (on bools the logical
/// ops).
ANVIL_BITWISE_OPERATOR(&, bitwise_and)
ANVIL_BITWISE_OPERATOR(|, bitwise_or)
ANVIL_BITWISE_OPERATOR(^, bitwise_xor)
///@}
#undef ANVIL_BITWISE_OPERATOR
///@{
/// In place: bitwise_and_, bitwise_or_, bitwise_xor_.
inline Tensor& operator&=(Tensor& a, const Tensor& b) { return bitwise_and_(a, b); }
inline Tensor& operator|=(Tensor& a, const Tensor& b) { return bitwise_or_(a, b); }
inline Tensor& operator^=(Tensor& a, const Tensor& b) { return bitwise_xor_(a, b); }
inline Tensor& operator&=(Tensor& a, const Scalar& b) { return bitwise_and_(a, b); }
inline Tensor& operator|=(Tensor& a, const Scalar& b) { return bitwise_or_(a, b); }
inline Tensor& operator^=(Tensor& a, const Scalar& b) { return bitwise_xor_(a, b); }
///@}
inline Tensor operator~(const Tensor& x) { return bitwise_not(x); }  ///< bitwise_not(x).
inline Tensor operator!(const Tensor& x) { return logical_not(x); }  ///< logical_not(x), bool for any dtype.

}  // namespace anvil
