#pragma once
// Reduction operators for kernels/cuda/reduce.cu, one per ReduceOp family,
// mirroring kernels/cpu/reduce.cpp. Each has
//   Acc identity(); Acc lift(T x, int64_t index); Acc combine(Acc a, Acc b);
//   R finish(Acc a, int64_t n)
// combine is associative and, for ArgMax/ArgMin, order-independent (ties and
// NaNs go to the smaller index), so any split of the work gives the CPU's
// answer: the first extreme index. Floating inputs accumulate in float
// (double for float64), integers and bool in int64 (acc_t).
// Device-only header.
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device/block_reduce.cuh"
#include "kernels/cuda/device/dtype.cuh"

namespace anvil::cuda::dev {

// Sum and the sum-shaped reductions. The mode is a launch-time constant.
enum class SumMode : int { Sum, Mean, AbsSum, SquareSqrt, NonZero, PowRoot };

template <typename T>
struct SumReduce {
  using Acc = acc_t<T>;
  SumMode mode = SumMode::Sum;
  Acc p = Acc(2);  // PowRoot only
  __device__ __forceinline__ Acc identity() const { return Acc(0); }
  __device__ __forceinline__ Acc lift(T x, int64_t) const {
    const Acc v = cast<Acc>(x);
    if constexpr (std::is_floating_point_v<Acc>) {
      switch (mode) {
        case SumMode::AbsSum: return fabs(v);
        case SumMode::SquareSqrt: return v * v;
        case SumMode::NonZero: return v != Acc(0) ? Acc(1) : Acc(0);
        case SumMode::PowRoot: return pow(fabs(v), p);
        default: return v;
      }
    } else {
      return v;
    }
  }
  __device__ __forceinline__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ __forceinline__ Acc finish(Acc s, int64_t n) const {
    if constexpr (std::is_floating_point_v<Acc>) {
      switch (mode) {
        case SumMode::Mean: return s / static_cast<Acc>(n);
        case SumMode::SquareSqrt: return sqrt(s);
        case SumMode::PowRoot: return pow(s, Acc(1) / p);
        default: return s;
      }
    } else {
      return s;
    }
  }
};

template <typename T>
struct ProdReduce {
  using Acc = acc_t<T>;
  __device__ __forceinline__ Acc identity() const { return Acc(1); }
  __device__ __forceinline__ Acc lift(T x, int64_t) const { return cast<Acc>(x); }
  __device__ __forceinline__ Acc combine(Acc a, Acc b) const { return a * b; }
  __device__ __forceinline__ Acc finish(Acc a, int64_t) const { return a; }
};

// Max or min of x, or of |x| (the inf-norms). NaN wins.
template <typename T, bool kMax>
struct ExtremeReduce {
  using Acc = acc_t<T>;
  bool abs = false;
  __device__ __forceinline__ Acc identity() const {
    if (kMax && abs) return Acc(0);
    return kMax ? lowest<Acc>() : highest<Acc>();
  }
  __device__ __forceinline__ Acc lift(T x, int64_t) const {
    const Acc v = cast<Acc>(x);
    if constexpr (std::is_floating_point_v<Acc>) return abs ? fabs(v) : v;
    else return abs ? (v < 0 ? -v : v) : v;
  }
  __device__ __forceinline__ Acc combine(Acc a, Acc b) const { return kMax ? nan_max(a, b) : nan_min(a, b); }
  __device__ __forceinline__ Acc finish(Acc a, int64_t) const { return a; }
};

template <typename T>
struct VarReduce {
  using A = acc_t<T>;
  using Acc = Welford<A>;
  int64_t correction = 1;
  __device__ __forceinline__ Acc identity() const { return Acc::empty(); }
  __device__ __forceinline__ Acc lift(T x, int64_t) const { return Acc{cast<A>(x), A(0), 1}; }
  __device__ __forceinline__ Acc combine(const Acc& a, const Acc& b) const { return WelfordOp{}(a, b); }
  __device__ __forceinline__ A finish(const Acc& a, int64_t) const {
    const A denom = static_cast<A>(a.n) - static_cast<A>(correction);
    return a.m2 / (denom > A(0) ? denom : A(0));
  }
};

template <typename V>
struct ArgAcc {
  V value;
  int64_t index;  // -1: empty
};

template <typename T, bool kMax>
struct ArgReduce {
  using V = acc_t<T>;
  using Acc = ArgAcc<V>;
  __device__ __forceinline__ Acc identity() const { return Acc{V(0), -1}; }
  __device__ __forceinline__ Acc lift(T x, int64_t index) const { return Acc{cast<V>(x), index}; }
  __device__ __forceinline__ Acc combine(const Acc& a, const Acc& b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    const bool an = is_nan(a.value), bn = is_nan(b.value);
    const Acc first = a.index < b.index ? a : b;
    if (an || bn) return an && bn ? first : an ? a : b;
    if (kMax ? b.value > a.value : b.value < a.value) return b;
    if (kMax ? a.value > b.value : a.value < b.value) return a;
    return first;
  }
  __device__ __forceinline__ int64_t finish(const Acc& a, int64_t) const { return a.index; }
};

// Adapts op.combine to the (a, b) functor warp_reduce/block_reduce take.
template <typename Op>
struct CombineWith {
  const Op& op;
  template <typename Acc>
  __device__ __forceinline__ Acc operator()(const Acc& a, const Acc& b) const { return op.combine(a, b); }
};

}  // namespace anvil::cuda::dev
