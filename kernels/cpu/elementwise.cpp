// Elementwise kernels: the unary op table's functors (kernels/ops/unary_ops.h)
// and one functor per BinaryOp here, one dtype dispatch per call. Functors compute in compute_t<T>: float for float16/bfloat16, the
// type itself otherwise. Each functor says which dtypes it accepts (Domain);
// any other dtype is an error that names the op and the dtype.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/ops/unary_ops.h"
#include "kernels/shapes/elementwise_checks.h"

namespace anvil::cpu {
namespace {

template <typename T> struct compute { using type = T; };
template <> struct compute<Half> { using type = float; };
template <> struct compute<BFloat16> { using type = float; };
template <typename T> using compute_t = typename compute<T>::type;

using ops::accepts;
using ops::Domain;

template <typename C> bool is_nan(C x) { return x != x; }  // false for integers

using ops::math::kGeluCoeff;
using ops::math::kInvSqrt2;
using ops::math::kInvSqrt2Pi;
using ops::math::kSqrt2OverPi;

// Unary ops: their functors are the op table's (kernels/ops/unary_ops.h).
// Binary functors (compute type C). kBool marks ops whose result is a bool tensor.
struct Add { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = false;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>) return a || b; else return a + b; } };
struct Sub { static constexpr Domain domain = Domain::Numeric; static constexpr bool kBool = false;
  template <class C> C operator()(C a, C b) const { return a - b; } };
struct Mul { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = false;
  template <class C> C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>) return a && b; else return a * b; } };
struct Div { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C a, C b) const { return a / b; } };
struct Pow { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C a, C b) const { return std::pow(a, b); } };
struct Maximum { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = false;
  template <class C> C operator()(C a, C b) const { return is_nan(a) ? a : (is_nan(b) || b > a) ? b : a; } };
struct Minimum { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = false;
  template <class C> C operator()(C a, C b) const { return is_nan(a) ? a : (is_nan(b) || b < a) ? b : a; } };
struct Eq { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = true;
  template <class C> bool operator()(C a, C b) const { return a == b; } };
struct Ne { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = true;
  template <class C> bool operator()(C a, C b) const { return a != b; } };
struct Lt { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = true;
  template <class C> bool operator()(C a, C b) const { return a < b; } };
struct Le { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = true;
  template <class C> bool operator()(C a, C b) const { return a <= b; } };
struct Gt { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = true;
  template <class C> bool operator()(C a, C b) const { return a > b; } };
struct Ge { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = true;
  template <class C> bool operator()(C a, C b) const { return a >= b; } };
struct LogicalAnd { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = true;
  template <class C> bool operator()(C a, C b) const { return (a != C(0)) & (b != C(0)); } };
struct LogicalOr { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = true;
  template <class C> bool operator()(C a, C b) const { return (a != C(0)) | (b != C(0)); } };
// Fused gradients: g is the incoming gradient, x the saved input, y the saved output.
struct ReluBackward { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C g, C x) const { return x > C(0) ? g : C(0); } };
struct GeluTanhBackward { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C g, C x) const {
    const C x2 = x * x;
    const C t = std::tanh(C(kSqrt2OverPi) * (x + C(kGeluCoeff) * x2 * x));
    const C dinner = C(kSqrt2OverPi) * (C(1) + C(3 * kGeluCoeff) * x2);
    return g * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * dinner);
  } };
struct GeluErfBackward { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C g, C x) const {
    const C cdf = C(0.5) * (C(1) + std::erf(x * C(kInvSqrt2)));
    const C pdf = C(kInvSqrt2Pi) * std::exp(C(-0.5) * x * x);
    return g * (cdf + x * pdf);
  } };
struct SiluBackward { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C g, C x) const {
    const C s = C(1) / (C(1) + std::exp(-x));
    return g * s * (C(1) + x * (C(1) - s));
  } };
struct SigmoidBackward { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C g, C y) const { return g * y * (C(1) - y); } };
struct TanhBackward { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C g, C y) const { return g * (C(1) - y * y); } };

using shapes::op_name;

template <typename T, ops::Domain D, ops::Result R, template <class> class F>
void unary_kernel(const char* name, const View& out, const View& in, const UnaryParams& p) {
  if constexpr (!ops::accepts<T>(D)) {
    fail(name, ": not supported for dtype ", dtype_of<T>::value);
  } else {
    using C = compute_t<T>;
    const F<C> op = ops::make_unary<F, C>(p);
    const DType expected = R == ops::Result::Bool ? kBool : in.dtype;
    ANVIL_CHECK(out.dtype == expected, name, ": output dtype ", out.dtype, " should be ", expected,
                " for input dtype ", in.dtype);
    if constexpr (R == ops::Result::Bool) map_elements<bool, T>(out, {&in}, [op](T x) { return op(C(x)); });
    else map_elements<T, T>(out, {&in}, [op](T x) { return T(op(C(x))); });
  }
}

template <typename T, typename Op>
void binary_kernel(const char* name, const View& out, const View& a, const View& b, const Op& op) {
  if constexpr (!accepts<T>(Op::domain)) {
    fail(name, ": not supported for dtype ", dtype_of<T>::value);
  } else {
    using C = compute_t<T>;
    const DType expected = Op::kBool ? kBool : a.dtype;
    ANVIL_CHECK(out.dtype == expected, name, ": output dtype ", out.dtype, " should be ", expected,
                " for input dtype ", a.dtype);
    if constexpr (Op::kBool) map_elements<bool, T, T>(out, {&a, &b}, [op](T x, T y) { return op(C(x), C(y)); });
    else map_elements<T, T, T>(out, {&a, &b}, [op](T x, T y) { return T(op(C(x), C(y))); });
  }
}

// Integer (and bool) division is true division, as in PyTorch: the op layer
// asks for a floating output, and the quotient is computed in double.
template <typename T>
void integer_div_kernel(const View& out, const View& a, const View& b) {
  ANVIL_CHECK(is_floating(out.dtype), "div: integer inputs of dtype ", a.dtype,
              " need a floating output (true division); got output dtype ", out.dtype);
  visit_dtype(out.dtype, [&](auto tag) {
    using O = decltype(tag);
    if constexpr (!std::is_integral_v<O>)
      map_elements<O, T, T>(out, {&a, &b}, [](T x, T y) { return cast_value<O>(double(x) / double(y)); });
  });
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const View& out, const View& in, const UnaryParams& p) {
  shapes::check_unary(op, out, in);
  const char* name = op_name(op);
  visit_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
#define ANVIL_CPU_UNARY_CASE(Enum, function, domain, result, api) \
  case UnaryOp::Enum:                                              \
    return unary_kernel<T, ops::Domain::domain, ops::Result::result, ops::Enum>(name, out, in, p);
      ANVIL_UNARY_OPS(ANVIL_CPU_UNARY_CASE)
#undef ANVIL_CPU_UNARY_CASE
    }
    fail("unary: unknown op ", static_cast<int>(op));
  });
}

void CpuBackend::binary(BinaryOp op, const View& out, const View& a, const View& b) {
  const char* name = op_name(op);
  shapes::check_binary(op, out, a, b);
  visit_dtype(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case BinaryOp::Add: return binary_kernel<T>(name, out, a, b, Add{});
      case BinaryOp::Sub: return binary_kernel<T>(name, out, a, b, Sub{});
      case BinaryOp::Mul: return binary_kernel<T>(name, out, a, b, Mul{});
      case BinaryOp::Div:
        if constexpr (std::is_integral_v<T>) return integer_div_kernel<T>(out, a, b);
        else return binary_kernel<T>(name, out, a, b, Div{});
      case BinaryOp::Pow: return binary_kernel<T>(name, out, a, b, Pow{});
      case BinaryOp::Maximum: return binary_kernel<T>(name, out, a, b, Maximum{});
      case BinaryOp::Minimum: return binary_kernel<T>(name, out, a, b, Minimum{});
      case BinaryOp::Eq: return binary_kernel<T>(name, out, a, b, Eq{});
      case BinaryOp::Ne: return binary_kernel<T>(name, out, a, b, Ne{});
      case BinaryOp::Lt: return binary_kernel<T>(name, out, a, b, Lt{});
      case BinaryOp::Le: return binary_kernel<T>(name, out, a, b, Le{});
      case BinaryOp::Gt: return binary_kernel<T>(name, out, a, b, Gt{});
      case BinaryOp::Ge: return binary_kernel<T>(name, out, a, b, Ge{});
      case BinaryOp::LogicalAnd: return binary_kernel<T>(name, out, a, b, LogicalAnd{});
      case BinaryOp::LogicalOr: return binary_kernel<T>(name, out, a, b, LogicalOr{});
      case BinaryOp::ReluBackward: return binary_kernel<T>(name, out, a, b, ReluBackward{});
      case BinaryOp::GeluTanhBackward: return binary_kernel<T>(name, out, a, b, GeluTanhBackward{});
      case BinaryOp::GeluErfBackward: return binary_kernel<T>(name, out, a, b, GeluErfBackward{});
      case BinaryOp::SiluBackward: return binary_kernel<T>(name, out, a, b, SiluBackward{});
      case BinaryOp::SigmoidBackward: return binary_kernel<T>(name, out, a, b, SigmoidBackward{});
      case BinaryOp::TanhBackward: return binary_kernel<T>(name, out, a, b, TanhBackward{});
    }
    fail("binary: unknown op ", static_cast<int>(op));
  });
}

void CpuBackend::where(const View& out, const View& cond, const View& a, const View& b) {
  shapes::check_where(out, cond, a, b);
  visit_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    // The condition is read as bytes: any nonzero byte selects a.
    map_elements<T, uint8_t, T, T>(out, {&cond, &a, &b}, [](uint8_t c, T x, T y) { return c ? x : y; });
  });
}

}  // namespace anvil::cpu
