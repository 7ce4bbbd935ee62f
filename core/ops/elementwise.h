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

// The table's Custom rows, with their extra arguments.
enum class GeluApprox { None, Tanh };
Tensor gelu(const Tensor& x, GeluApprox approx = GeluApprox::None);
/// An absent bound ({} or std::nullopt, as libtorch's) leaves that side open;
/// at least one is needed.
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi = std::nullopt);
Tensor clamp_min(const Tensor& x, double lo);
Tensor clamp_max(const Tensor& x, double hi);
/// The Clamp row's params for these bounds (absent ones infinite), or an error naming `op`.
UnaryParams clamp_bounds(const char* op, std::optional<double> lo, std::optional<double> hi);
Tensor pow(const Tensor& x, const Scalar& exponent);
/// The parametrised activations, with PyTorch's defaults: x where x > 0, else
/// negative_slope * x; alpha * (exp(x) - 1) below 0; log(1 + exp(beta x)) / beta,
/// x itself where beta * x > threshold. (mish and hardswish are Plain rows.)
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor pow(const Tensor& x, const Tensor& exponent);

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, const Scalar& b);
Tensor sub(const Tensor& a, const Scalar& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Scalar& b);
Tensor maximum(const Tensor& a, const Scalar& b);
Tensor minimum(const Tensor& a, const Scalar& b);
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
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha);
/// self + value * t1 * t2, self + value * t1 / t2, and self + weight * (end - self).
Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor lerp(const Tensor& self, const Tensor& end, const Scalar& weight);
Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight);

/// Comparisons give bool tensors.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);

/// Integer and bool tensors only (a floating operand is an error); on bool
/// they are the logical ops. bitwise_not is a row of the unary table above.
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, const Scalar& b);
Tensor bitwise_or(const Tensor& a, const Scalar& b);
Tensor bitwise_xor(const Tensor& a, const Scalar& b);

///@{
/// A scalar value takes the other value's dtype where its kind allows (as a
/// 0-d tensor does): where(c, x, 0.0) keeps a float32 x's dtype.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
///@}
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
Tensor& sub_(Tensor& self, const Tensor& other);
Tensor& mul_(Tensor& self, const Tensor& other);
Tensor& div_(Tensor& self, const Tensor& other);
Tensor& add_(Tensor& self, const Scalar& other);
Tensor& sub_(Tensor& self, const Scalar& other);
Tensor& mul_(Tensor& self, const Scalar& other);
Tensor& div_(Tensor& self, const Scalar& other);
Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha);
Tensor& sub_(Tensor& self, const Tensor& other, const Scalar& alpha);
Tensor& addcmul_(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor& addcdiv_(Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor& lerp_(Tensor& self, const Tensor& end, const Scalar& weight);
Tensor& lerp_(Tensor& self, const Tensor& end, const Tensor& weight);
Tensor& masked_fill_(Tensor& self, const Tensor& mask, const Scalar& value);
/// Integer and bool selves only; a bool self takes bool others (as PyTorch's
/// can_cast: an int result is not stored in a bool).
Tensor& bitwise_and_(Tensor& self, const Tensor& other);
Tensor& bitwise_or_(Tensor& self, const Tensor& other);
Tensor& bitwise_xor_(Tensor& self, const Tensor& other);
Tensor& bitwise_and_(Tensor& self, const Scalar& other);
Tensor& bitwise_or_(Tensor& self, const Scalar& other);
Tensor& bitwise_xor_(Tensor& self, const Scalar& other);

/// Broadcast shape of two shapes, or an error naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
/// Sums `grad` down to `shape` (the reverse of broadcasting).
Tensor sum_to(const Tensor& grad, const Shape& shape);

inline Tensor operator-(const Tensor& x) { return neg(x); }
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
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return add_(a, b); }
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return sub_(a, b); }
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return mul_(a, b); }
inline Tensor& operator/=(Tensor& a, const Tensor& b) { return div_(a, b); }
inline Tensor& operator+=(Tensor& a, const Scalar& b) { return add_(a, b); }
inline Tensor& operator-=(Tensor& a, const Scalar& b) { return sub_(a, b); }
inline Tensor& operator*=(Tensor& a, const Scalar& b) { return mul_(a, b); }
inline Tensor& operator/=(Tensor& a, const Scalar& b) { return div_(a, b); }

/// Comparisons give bool tensors, as libtorch's: x > 0, 0 < x, x == y. A
/// scalar on the left is the mirrored comparison (0 < x is x > 0).
#define ANVIL_COMPARISON_OPERATOR(op, function, mirrored) \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return function(a, b); } \
  inline Tensor operator op(const Tensor& a, const Scalar& b) { return function(a, b); } \
  inline Tensor operator op(const Scalar& a, const Tensor& b) { return mirrored(b, a); }
ANVIL_COMPARISON_OPERATOR(==, eq, eq)
ANVIL_COMPARISON_OPERATOR(!=, ne, ne)
ANVIL_COMPARISON_OPERATOR(<, lt, gt)
ANVIL_COMPARISON_OPERATOR(<=, le, ge)
ANVIL_COMPARISON_OPERATOR(>, gt, lt)
ANVIL_COMPARISON_OPERATOR(>=, ge, le)
#undef ANVIL_COMPARISON_OPERATOR

/// Bitwise operators on integer and bool tensors (& | ^ of bools are the
/// logical ops); ! is logical_not, with a bool result for any dtype.
#define ANVIL_BITWISE_OPERATOR(op, function) \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return function(a, b); } \
  inline Tensor operator op(const Tensor& a, const Scalar& b) { return function(a, b); } \
  inline Tensor operator op(const Scalar& a, const Tensor& b) { return function(b, a); }
ANVIL_BITWISE_OPERATOR(&, bitwise_and)
ANVIL_BITWISE_OPERATOR(|, bitwise_or)
ANVIL_BITWISE_OPERATOR(^, bitwise_xor)
#undef ANVIL_BITWISE_OPERATOR
inline Tensor& operator&=(Tensor& a, const Tensor& b) { return bitwise_and_(a, b); }
inline Tensor& operator|=(Tensor& a, const Tensor& b) { return bitwise_or_(a, b); }
inline Tensor& operator^=(Tensor& a, const Tensor& b) { return bitwise_xor_(a, b); }
inline Tensor& operator&=(Tensor& a, const Scalar& b) { return bitwise_and_(a, b); }
inline Tensor& operator|=(Tensor& a, const Scalar& b) { return bitwise_or_(a, b); }
inline Tensor& operator^=(Tensor& a, const Scalar& b) { return bitwise_xor_(a, b); }
inline Tensor operator~(const Tensor& x) { return bitwise_not(x); }
inline Tensor operator!(const Tensor& x) { return logical_not(x); }

}  // namespace anvil
