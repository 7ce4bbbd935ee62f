// Elementwise kernels: one functor per UnaryOp/BinaryOp, one dtype dispatch
// per call. Functors compute in compute_t<T>: float for float16/bfloat16, the
// type itself otherwise. Each functor says which dtypes it accepts (Domain);
// any other dtype is an error that names the op and the dtype.
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/shapes/elementwise_checks.h"
#include "kernels/cpu/strided_loop.h"

namespace anvil::cpu {
namespace {

template <typename T> struct compute { using type = T; };
template <> struct compute<Half> { using type = float; };
template <> struct compute<BFloat16> { using type = float; };
template <typename T> using compute_t = typename compute<T>::type;

// Floating: float dtypes only. Numeric: also integers. Any: also bool.
enum class Domain { Floating, Numeric, Any };

template <typename T>
constexpr bool accepts(Domain d) {
  if constexpr (std::is_same_v<T, bool>) return d == Domain::Any;
  else if constexpr (std::is_integral_v<T>) return d != Domain::Floating;
  else return true;
}

template <typename C> bool is_nan(C x) { return x != x; }  // false for integers

constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluCoeff = 0.044715;
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)

// Functors (compute type C). kBool marks ops whose result is a bool tensor.
// ---- unary ----
struct Neg { static constexpr Domain domain = Domain::Numeric; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return -x; } };
struct Abs { static constexpr Domain domain = Domain::Numeric; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return std::abs(x); else return x < 0 ? C(-x) : x; } };
struct Exp { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return std::exp(x); } };
struct Log { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return std::log(x); } };
struct Sqrt { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return std::sqrt(x); } };
struct Rsqrt { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return C(1) / std::sqrt(x); } };
struct Sin { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return std::sin(x); } };
struct Cos { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return std::cos(x); } };
struct Tanh { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return std::tanh(x); } };
struct Sigmoid { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return C(1) / (C(1) + std::exp(-x)); } };
struct Relu { static constexpr Domain domain = Domain::Numeric; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return x < C(0) ? C(0) : x; } };  // NaN stays NaN
struct GeluTanh { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const {
    return C(0.5) * x * (C(1) + std::tanh(C(kSqrt2OverPi) * (x + C(kGeluCoeff) * x * x * x))); } };
struct GeluErf { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return C(0.5) * x * (C(1) + std::erf(x * C(kInvSqrt2))); } };
struct Silu { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return x / (C(1) + std::exp(-x)); } };
struct Sign { static constexpr Domain domain = Domain::Numeric; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return C((C(0) < x) - (x < C(0))); } };
struct Reciprocal { static constexpr Domain domain = Domain::Floating; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return C(1) / x; } };
struct Square { static constexpr Domain domain = Domain::Numeric; static constexpr bool kBool = false;
  template <class C> C operator()(C x) const { return x * x; } };
struct LogicalNot { static constexpr Domain domain = Domain::Any; static constexpr bool kBool = true;
  template <class C> bool operator()(C x) const { return x == C(0); } };
// Bounds arrive as doubles (possibly infinite); C is float, double or an integer.
template <class C>
struct Clamp { static constexpr Domain domain = Domain::Numeric; static constexpr bool kBool = false;
  C lo, hi;
  explicit Clamp(const UnaryParams& p) : lo(bound(p.lo)), hi(bound(p.hi)) {}
  static C bound(double v) {
    if constexpr (std::is_floating_point_v<C>) return static_cast<C>(v);
    else return v <= double(std::numeric_limits<C>::lowest()) ? std::numeric_limits<C>::lowest()
              : v >= double(std::numeric_limits<C>::max()) ? std::numeric_limits<C>::max() : static_cast<C>(v);
  }
  C operator()(C x) const {  // min(max(x, lo), hi) as PyTorch: NaN stays NaN, lo > hi gives hi
    const C m = x < lo ? lo : x;
    return hi < m ? hi : m;
  } };

// ---- binary ----
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

template <typename T, typename Op>
void unary_kernel(const char* name, const View& out, const View& in, const Op& op) {
  if constexpr (!accepts<T>(Op::domain)) {
    fail(name, ": not supported for dtype ", dtype_of<T>::value);
  } else {
    using C = compute_t<T>;
    const DType expected = Op::kBool ? kBool : in.dtype;
    ANVIL_CHECK(out.dtype == expected, name, ": output dtype ", out.dtype, " should be ", expected,
                " for input dtype ", in.dtype);
    if constexpr (Op::kBool) map_elements<bool, T>(out, {&in}, [op](T x) { return op(C(x)); });
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
      case UnaryOp::Neg: return unary_kernel<T>(name, out, in, Neg{});
      case UnaryOp::Abs: return unary_kernel<T>(name, out, in, Abs{});
      case UnaryOp::Exp: return unary_kernel<T>(name, out, in, Exp{});
      case UnaryOp::Log: return unary_kernel<T>(name, out, in, Log{});
      case UnaryOp::Sqrt: return unary_kernel<T>(name, out, in, Sqrt{});
      case UnaryOp::Rsqrt: return unary_kernel<T>(name, out, in, Rsqrt{});
      case UnaryOp::Sin: return unary_kernel<T>(name, out, in, Sin{});
      case UnaryOp::Cos: return unary_kernel<T>(name, out, in, Cos{});
      case UnaryOp::Tanh: return unary_kernel<T>(name, out, in, Tanh{});
      case UnaryOp::Sigmoid: return unary_kernel<T>(name, out, in, Sigmoid{});
      case UnaryOp::Relu: return unary_kernel<T>(name, out, in, Relu{});
      case UnaryOp::GeluTanh: return unary_kernel<T>(name, out, in, GeluTanh{});
      case UnaryOp::GeluErf: return unary_kernel<T>(name, out, in, GeluErf{});
      case UnaryOp::Silu: return unary_kernel<T>(name, out, in, Silu{});
      case UnaryOp::Sign: return unary_kernel<T>(name, out, in, Sign{});
      case UnaryOp::Reciprocal: return unary_kernel<T>(name, out, in, Reciprocal{});
      case UnaryOp::Square: return unary_kernel<T>(name, out, in, Square{});
      case UnaryOp::LogicalNot: return unary_kernel<T>(name, out, in, LogicalNot{});
      case UnaryOp::Clamp:
        if constexpr (std::is_same_v<T, bool>) fail(name, ": not supported for dtype bool");
        else return unary_kernel<T>(name, out, in, Clamp<compute_t<T>>(p));
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
