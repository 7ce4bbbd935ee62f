#pragma once
// The reductions, each declared once: a row of ANVIL_REDUCE_OPS gives the
// enum value, the name, the dtypes it accepts, its result dtype, the value of
// an empty slice and how many dims it reduces; the math below is written once
// as ANVIL_HD code that the CPU backend, the CUDA kernels (nvcc) and the
// emulated GPU (g++) all compile.
//
// A reduction is an accumulator:
//   identity(), lift(x, index) -> Acc, combine(a, b) -> Acc, finish(acc, n)
// where combine is associative, so any split of the work (threads, blocks,
// warps) gives the same answer up to rounding. The backends choose the
// accumulation type A (the CPU: double for floats, int64 for integers; CUDA:
// float for 32- and 16-bit floats) and walk memory their own way; what a
// reduction computes lives here.
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <type_traits>

#include "core/base/dtype.h"
#include "core/base/host_device.h"
#include "kernels/ops/math.h"

namespace anvil {

// Which input dtypes a reduction takes.
enum class ReduceInputs : uint8_t { AnyDType, FloatingOnly };
// Its result dtype: the input's; int64 for bool and integer inputs and the
// input's for floats (sums and products accumulate there, as in PyTorch); or
// an int64 index.
enum class ReduceResult : uint8_t { SameAsInput, Accumulated, Index };
// The value of a reduction over no elements; NoIdentity: an error.
enum class ReduceEmpty : uint8_t { NoIdentity, Zero, One, NaN };

//  X(Enum,  name,     inputs,       result,      empty,      reduces exactly one dim)
#define ANVIL_REDUCE_OPS(X) \
  X(Sum, "sum", AnyDType, Accumulated, Zero, false) \
  X(Mean, "mean", FloatingOnly, SameAsInput, NaN, false) \
  X(Max, "max", AnyDType, SameAsInput, NoIdentity, false) \
  X(Min, "min", AnyDType, SameAsInput, NoIdentity, false) \
  X(Prod, "prod", AnyDType, Accumulated, One, false) \
  X(Var, "var", FloatingOnly, SameAsInput, NaN, false) \
  /* p-norms; the inf-norms (a max or min of |x|) have no identity */ \
  X(Norm, "norm", FloatingOnly, SameAsInput, Zero, false) \
  X(ArgMax, "argmax", AnyDType, Index, NoIdentity, true) \
  X(ArgMin, "argmin", AnyDType, Index, NoIdentity, true)

#define ANVIL_REDUCE_ENUM(Name, ...) Name,
enum class ReduceOp : uint8_t { ANVIL_REDUCE_OPS(ANVIL_REDUCE_ENUM) };
#undef ANVIL_REDUCE_ENUM

struct ReduceParams {
  int64_t correction = 1;  // Var: divide by n - correction
  double p = 2.0;  // Norm: p-norm, p may be inf
};

namespace ops {

struct ReduceInfo {
  const char* name;  // the op's name in every error
  ReduceInputs inputs;
  ReduceResult result;
  ReduceEmpty empty;
  bool one_dim;  // reduces exactly one dim (the arg-reductions)
};

#define ANVIL_REDUCE_INFO(Name, name, inputs, result, empty, one_dim) \
  ReduceInfo{name, ReduceInputs::inputs, ReduceResult::result, ReduceEmpty::empty, one_dim},
inline constexpr ReduceInfo kReduceOps[] = {ANVIL_REDUCE_OPS(ANVIL_REDUCE_INFO)};
#undef ANVIL_REDUCE_INFO
#define ANVIL_REDUCE_ONE(...) +1
inline constexpr int kReduceOpCount = 0 ANVIL_REDUCE_OPS(ANVIL_REDUCE_ONE);
#undef ANVIL_REDUCE_ONE
static_assert(std::size(kReduceOps) == kReduceOpCount, "one ReduceInfo per ReduceOp");

constexpr const ReduceInfo& reduce_info(ReduceOp op) { return kReduceOps[static_cast<int>(op)]; }

inline bool reduce_accepts(ReduceOp op, DType input) {
  return reduce_info(op).inputs == ReduceInputs::AnyDType || is_floating(input);
}

// The dtype a reduction of `input` produces.
inline DType reduce_result_dtype(ReduceOp op, DType input) {
  switch (reduce_info(op).result) {
    case ReduceResult::Index:
      return DType::Int64;
    case ReduceResult::Accumulated:
      return is_floating(input) ? input : DType::Int64;
    case ReduceResult::SameAsInput:
      break;
  }
  return input;
}

// Whether a reduction over no elements has a value (the inf-norms do not).
inline bool reduce_has_identity(ReduceOp op, const ReduceParams& p) {
  if (op == ReduceOp::Norm && std::isinf(p.p)) return false;
  return reduce_info(op).empty != ReduceEmpty::NoIdentity;
}

// The value of an empty slice (NaN for Mean and Var, as 0/0).
inline double reduce_empty_value(ReduceOp op) {
  switch (reduce_info(op).empty) {
    case ReduceEmpty::One:
      return 1.0;
    case ReduceEmpty::NaN:
      return std::numeric_limits<double>::quiet_NaN();
    default:
      return 0.0;
  }
}

// ---- the math: one accumulator family per row, on accumulation type A ----
namespace reduce {

// Sum-shaped reductions: sum of lift(x), then finish. The mode is a template
// argument on the CPU (one simd loop each) and a launch parameter on CUDA
// (one kernel per dtype for all of them).
enum class SumMode : uint8_t { Sum, Mean, AbsSum, SquareSqrt, NonZero, PowRoot };

template <SumMode M, class A> ANVIL_HD A sum_lift(A v, A p) {
  if constexpr (!std::is_floating_point_v<A> || M == SumMode::Sum || M == SumMode::Mean)
    return v;
  else if constexpr (M == SumMode::AbsSum)
    return math::fabs(v);
  else if constexpr (M == SumMode::SquareSqrt)
    return v * v;
  else if constexpr (M == SumMode::NonZero)
    return v != A(0) ? A(1) : A(0);
  else
    return math::pow(math::fabs(v), p);
}

template <SumMode M, class A> ANVIL_HD A sum_finish(A s, int64_t n, A p) {
  if constexpr (!std::is_floating_point_v<A>)
    return s;
  else if constexpr (M == SumMode::Mean)
    return s / static_cast<A>(n);
  else if constexpr (M == SumMode::SquareSqrt)
    return math::sqrt(s);
  else if constexpr (M == SumMode::PowRoot)
    return math::pow(s, A(1) / p);
  else
    return s;
}

// The sum-shaped accumulator with its mode known at compile time (the CPU's).
template <class A, SumMode M> struct Sum {
  using Value = A;  // what lift takes (the backend converts stored values to it)
  using Acc = A;
  A p = A(2);  // PowRoot only
  ANVIL_HD A identity() const { return A(0); }
  ANVIL_HD A lift(A v, int64_t = 0) const { return sum_lift<M>(v, p); }
  ANVIL_HD A combine(A a, A b) const { return math::wrapping_add(a, b); }
  ANVIL_HD A finish(A s, int64_t n) const { return sum_finish<M>(s, n, p); }
};

// The same with the mode chosen at run time (the CUDA kernels').
template <class A> struct SumAnyMode {
  using Value = A;
  using Acc = A;
  SumMode mode = SumMode::Sum;
  A p = A(2);
  ANVIL_HD A identity() const { return A(0); }
  ANVIL_HD A lift(A v, int64_t = 0) const {
    switch (mode) {
      case SumMode::AbsSum:
        return sum_lift<SumMode::AbsSum>(v, p);
      case SumMode::SquareSqrt:
        return sum_lift<SumMode::SquareSqrt>(v, p);
      case SumMode::NonZero:
        return sum_lift<SumMode::NonZero>(v, p);
      case SumMode::PowRoot:
        return sum_lift<SumMode::PowRoot>(v, p);
      default:
        return v;
    }
  }
  ANVIL_HD A combine(A a, A b) const { return math::wrapping_add(a, b); }
  ANVIL_HD A finish(A s, int64_t n) const {
    switch (mode) {
      case SumMode::Mean:
        return sum_finish<SumMode::Mean>(s, n, p);
      case SumMode::SquareSqrt:
        return sum_finish<SumMode::SquareSqrt>(s, n, p);
      case SumMode::PowRoot:
        return sum_finish<SumMode::PowRoot>(s, n, p);
      default:
        return s;
    }
  }
};

template <class A> struct Product {
  using Value = A;
  using Acc = A;
  ANVIL_HD A identity() const { return A(1); }
  ANVIL_HD A lift(A v, int64_t = 0) const { return v; }
  ANVIL_HD A combine(A a, A b) const { return math::wrapping_mul(a, b); }
  ANVIL_HD A finish(A a, int64_t) const { return a; }
};

// Max or min of x, or of |x| (the inf-norms). A NaN wins, as in PyTorch.
// `lowest`/`highest` are A's identities (-inf/+inf for floats), supplied by
// the backend because numeric_limits is host-only.
template <class A, bool kMax> struct Extreme {
  using Value = A;
  using Acc = A;
  A lowest, highest;
  bool abs = false;
  ANVIL_HD A identity() const {
    if (kMax && abs) return A(0);
    return kMax ? lowest : highest;
  }
  ANVIL_HD A lift(A v, int64_t = 0) const { return abs ? (v < A(0) ? A(-v) : v) : v; }
  ANVIL_HD A combine(A a, A b) const { return kMax ? math::nan_max(a, b) : math::nan_min(a, b); }
  ANVIL_HD A finish(A a, int64_t) const { return a; }
};

// Count, mean and sum of squared deviations; merged with Chan's formula.
template <class A> struct Moments {
  A mean;
  A m2;
  int64_t n;

  ANVIL_HD static Moments empty() { return Moments{A(0), A(0), 0}; }
  ANVIL_HD void add(A x) {  // Welford's online update
    ++n;
    const A delta = x - mean;
    mean += delta / static_cast<A>(n);
    m2 += delta * (x - mean);
  }
  ANVIL_HD static Moments merge(const Moments& a, const Moments& b) {
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    const int64_t n = a.n + b.n;
    const A delta = b.mean - a.mean;
    const A frac_b = static_cast<A>(b.n) / static_cast<A>(n);
    const A m2 = a.m2 + b.m2 + delta * delta * static_cast<A>(a.n) * frac_b;
    // Finite means further apart than A's range: the spread is infinite, but
    // the mean (a weighted average) is not; a.mean + inf * frac_b would make
    // it infinite and a later merge NaN (inf - inf).
    if (math::isinf(delta) && !math::isinf(a.mean) && !math::isinf(b.mean))
      return Moments{a.mean * (A(1) - frac_b) + b.mean * frac_b, m2, n};
    return Moments{a.mean + delta * frac_b, m2, n};
  }
};

template <class A> struct Variance {
  using Value = A;
  using Acc = Moments<A>;
  int64_t correction = 1;
  ANVIL_HD Acc identity() const { return Acc::empty(); }
  ANVIL_HD Acc lift(A v, int64_t = 0) const { return Acc{v, A(0), 1}; }
  ANVIL_HD Acc combine(const Acc& a, const Acc& b) const { return Acc::merge(a, b); }
  ANVIL_HD A finish(const Acc& a, int64_t) const {
    const A denom = static_cast<A>(a.n) - static_cast<A>(correction);
    return a.m2 / (denom > A(0) ? denom : A(0));
  }
};

// The first index of the max (min); a NaN counts as the extreme. combine
// does not depend on the order of its arguments (ties go to the smaller
// index), so any split of the work gives the first index.
template <class V> struct ArgAcc {
  V value;
  int64_t index;  // -1: empty
};

template <class V, bool kMax> struct ArgExtreme {
  using Value = V;
  using Acc = ArgAcc<V>;
  ANVIL_HD Acc identity() const { return Acc{V(0), -1}; }
  ANVIL_HD Acc lift(V v, int64_t index) const { return Acc{v, index}; }
  ANVIL_HD Acc combine(const Acc& a, const Acc& b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool an = math::isnan(a.value), bn = math::isnan(b.value);
    const Acc& first = a.index < b.index ? a : b;
    if (an || bn) return an && bn ? first : an ? a : b;
    if (kMax ? b.value > a.value : b.value < a.value) return b;
    if (kMax ? a.value > b.value : a.value < b.value) return a;
    return first;
  }
  ANVIL_HD int64_t finish(const Acc& a, int64_t) const { return a.index; }
};

}  // namespace reduce
}  // namespace ops
}  // namespace anvil
