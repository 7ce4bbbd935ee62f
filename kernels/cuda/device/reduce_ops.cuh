#pragma once
// The reductions of kernels/cuda/reduce*.cu: the table's accumulators
// (kernels/ops/reduce_ops.h, shared with the CPU backend) fed with storage
// values. Floating inputs accumulate in float (double for float64), integers
// and bool in int64 (acc_t). Each accumulator is plain data built on the host
// and passed to the kernels by value.
#include <cstdint>
#include <limits>

#include "kernels/cuda/device/block_reduce.cuh"
#include "kernels/cuda/device/dtype.cuh"
#include "kernels/ops/reduce_ops.h"

namespace anvil::cuda::dev {

using ops::reduce::SumMode;

// Reducer R with lift taking storage type T (converted to R's value type first).
template <typename T, typename R> struct OnStorage : R {
  __device__ __forceinline__ auto lift(T x, int64_t index) const { return R::lift(cast<typename R::Value>(x), index); }
};

template <typename T> using SumReduce = OnStorage<T, ops::reduce::SumAnyMode<acc_t<T>>>;
// p-norms accumulate in double for every floating dtype: squares (and cubes)
// of large float32 values leave float's range while the norm itself does not
// (the CPU's answer), and a memory-bound reduction does not feel the wider type.
template <typename T> using NormReduce = OnStorage<T, ops::reduce::SumAnyMode<double>>;
template <typename T> using ProdReduce = OnStorage<T, ops::reduce::Product<acc_t<T>>>;
template <typename T, bool kMax> using ExtremeReduce = OnStorage<T, ops::reduce::Extreme<acc_t<T>, kMax>>;
template <typename T> using VarReduce = OnStorage<T, ops::reduce::Variance<acc_t<T>>>;
template <typename T, bool kMax> using ArgReduce = OnStorage<T, ops::reduce::ArgExtreme<acc_t<T>, kMax>>;

// Host-side constructors.
template <typename T> SumReduce<T> sum_reduce(SumMode mode) {
  SumReduce<T> r;
  r.mode = mode;
  return r;
}

template <typename T> NormReduce<T> norm_reduce(SumMode mode, double p) {
  NormReduce<T> r;
  r.mode = mode;
  r.p = p;
  return r;
}

template <typename T, bool kMax> ExtremeReduce<T, kMax> extreme_reduce(bool abs) {
  using A = acc_t<T>;
  using Limits = std::numeric_limits<A>;
  ExtremeReduce<T, kMax> r;
  r.lowest = Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
  r.highest = Limits::has_infinity ? Limits::infinity() : Limits::max();
  r.abs = abs;
  return r;
}

template <typename T> VarReduce<T> var_reduce(int64_t correction) {
  VarReduce<T> r;
  r.correction = correction;
  return r;
}

// Adapts op.combine to the (a, b) functor warp_reduce/block_reduce take.
template <typename Op> struct CombineWith {
  const Op& op;
  template <typename Acc> __device__ __forceinline__ Acc operator()(const Acc& a, const Acc& b) const {
    return op.combine(a, b);
  }
};

}  // namespace anvil::cuda::dev
