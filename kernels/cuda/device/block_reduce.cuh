#pragma once
// Warp and block reductions with register shuffles. Device-only.
//
// Rules for callers:
//   - warp_reduce*: all 32 lanes of the warp call it (full-mask shuffles);
//     every lane gets the result.
//   - block_reduce*: every thread of a 1-D block calls it, blockDim.x is a
//     multiple of 32 (<= 1024); every thread gets the result. Back-to-back
//     calls are safe: each call starts with a __syncthreads() that retires
//     the previous call's use of the shared scratch.
//   - The combination order is fixed (butterfly within a warp, then warps in
//     index order), so a given launch configuration is deterministic.
//
// Pair states for one-pass statistics: Welford (count, mean, M2 -> var) and
// MaxSum (running max and sum of exp(x - max), for softmax/logsumexp).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/device/dtype.cuh"

namespace anvil::cuda::dev {

inline constexpr unsigned kFullMask = 0xffffffffu;
inline constexpr int kWarpSize = 32;

// __shfl_xor_sync for any trivially copyable T: builtin types go straight
// through, others (structs) are moved as 32-bit words.
template <typename T>
__device__ __forceinline__ T shfl_xor(T v, int lane_mask) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int> ||
                std::is_same_v<T, unsigned> || std::is_same_v<T, long long> ||
                std::is_same_v<T, unsigned long long> || std::is_same_v<T, int64_t> ||
                std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) {
    return __shfl_xor_sync(kFullMask, v, lane_mask);
  } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, uint8_t>) {
    return static_cast<T>(__shfl_xor_sync(kFullMask, static_cast<int>(v), lane_mask));
  } else {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) % 4 == 0,
                  "shfl_xor: structs must be trivially copyable with a size multiple of 4 bytes");
    constexpr int kWords = sizeof(T) / 4;
    unsigned w[kWords];
    memcpy(w, &v, sizeof(T));
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = __shfl_xor_sync(kFullMask, w[i], lane_mask);
    T r;
    memcpy(&r, w, sizeof(T));
    return r;
  }
}

// ---- reduction operators (functors: T operator()(T, T)) ----
struct SumOp {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct MaxOp {  // NaN propagates
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return nan_max(a, b); }
};
struct MinOp {  // NaN propagates
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return nan_min(a, b); }
};

// ---- warp ----
template <typename T, typename Op>
__device__ __forceinline__ T warp_reduce(T v, Op op) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) v = op(v, shfl_xor(v, offset));
  return v;
}
template <typename T> __device__ __forceinline__ T warp_reduce_sum(T v) { return warp_reduce(v, SumOp{}); }
template <typename T> __device__ __forceinline__ T warp_reduce_max(T v) { return warp_reduce(v, MaxOp{}); }
template <typename T> __device__ __forceinline__ T warp_reduce_min(T v) { return warp_reduce(v, MinOp{}); }

// ---- block ----

// Static shared scratch for one T per warp (one buffer per T instantiation).
template <typename T>
__device__ __forceinline__ T* block_scratch() {
  __shared__ alignas(16) unsigned char buffer[kWarpSize * sizeof(T)];
  return reinterpret_cast<T*>(buffer);
}

// `scratch` is shared memory for at least blockDim.x / 32 values of T.
template <typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, Op op, T* scratch) {
  const int lane = threadIdx.x & (kWarpSize - 1);
  const int warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  v = warp_reduce(v, op);
  if (warps == 1) return v;
  __syncthreads();  // the previous call's readers are done with scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  // Every thread folds the per-warp partials (broadcast reads, no identity
  // needed, same order everywhere).
  T r = scratch[0];
  for (int w = 1; w < warps; ++w) r = op(r, scratch[w]);
  return r;
}
template <typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, Op op) { return block_reduce(v, op, block_scratch<T>()); }

template <typename T> __device__ __forceinline__ T block_reduce_sum(T v) { return block_reduce(v, SumOp{}); }
template <typename T> __device__ __forceinline__ T block_reduce_max(T v) { return block_reduce(v, MaxOp{}); }
template <typename T> __device__ __forceinline__ T block_reduce_min(T v) { return block_reduce(v, MinOp{}); }

// ---- two-value states ----

// Welford's running (count, mean, M2): var = m2 / (n - correction).
// Combine is Chan et al.'s parallel update, exact for merging partial counts.
template <typename A>
struct Welford {
  A mean;
  A m2;
  int64_t n;

  __device__ __forceinline__ static Welford empty() { return Welford{A(0), A(0), 0}; }
  __device__ __forceinline__ void add(A x) {
    ++n;
    const A delta = x - mean;
    mean += delta / static_cast<A>(n);
    m2 += delta * (x - mean);
  }
};
struct WelfordOp {
  template <typename A>
  __device__ __forceinline__ Welford<A> operator()(const Welford<A>& a, const Welford<A>& b) const {
    if (b.n == 0) return a;
    if (a.n == 0) return b;
    const int64_t n = a.n + b.n;
    const A delta = b.mean - a.mean;
    const A frac_b = static_cast<A>(b.n) / static_cast<A>(n);
    return Welford<A>{a.mean + delta * frac_b, a.m2 + b.m2 + delta * delta * static_cast<A>(a.n) * frac_b, n};
  }
};
template <typename A>
__device__ __forceinline__ Welford<A> warp_reduce_welford(Welford<A> v) { return warp_reduce(v, WelfordOp{}); }
template <typename A>
__device__ __forceinline__ Welford<A> block_reduce_welford(Welford<A> v) { return block_reduce(v, WelfordOp{}); }

// Online softmax state: max and sum of exp(x - max). An empty state is
// {-inf, 0}; combining never forms (-inf) - (-inf).
template <typename A>
struct MaxSum {
  A max;
  A sum;

  __device__ __forceinline__ static MaxSum empty() { return MaxSum{lowest<A>(), A(0)}; }
};
struct MaxSumOp {
  template <typename A>
  __device__ __forceinline__ MaxSum<A> operator()(const MaxSum<A>& a, const MaxSum<A>& b) const {
    const A m = nan_max(a.max, b.max);  // a NaN max makes the sum NaN below
    if (m == lowest<A>()) return MaxSum<A>{m, a.sum + b.sum};
    const A sa = a.max == m ? a.sum : a.sum * exp(a.max - m);
    const A sb = b.max == m ? b.sum : b.sum * exp(b.max - m);
    return MaxSum<A>{m, sa + sb};
  }
};
template <typename A>
__device__ __forceinline__ MaxSum<A> warp_reduce_max_sum(MaxSum<A> v) { return warp_reduce(v, MaxSumOp{}); }
template <typename A>
__device__ __forceinline__ MaxSum<A> block_reduce_max_sum(MaxSum<A> v) { return block_reduce(v, MaxSumOp{}); }

}  // namespace anvil::cuda::dev
