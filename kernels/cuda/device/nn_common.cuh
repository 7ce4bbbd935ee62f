#pragma once
// Small device helpers of the nn kernels (softmax, layer_norm, cross_entropy,
// random, indexing, optim): short names for the shared conversions and
// reductions, and a plain 8-dim offset calculator for the strided kernels
// whose operands have different shapes (gather/scatter, any-rank fallbacks).
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device/block_reduce.cuh"
#include "kernels/cuda/device/dtype.cuh"

namespace anvil::cuda::nn {

// Thin names over the shared device vocabulary (dtype.cuh, block_reduce.cuh).
using dev::acc_t;  // float for float/16-bit floats, double for double

template <typename C, typename T> __device__ __forceinline__ C load_as(T v) { return dev::cast<C>(v); }
template <typename T, typename C> __device__ __forceinline__ T store_as(C v) { return dev::cast<T>(v); }

template <typename C> __device__ __forceinline__ C warp_sum(C v) { return dev::warp_reduce_sum(v); }
template <typename C> __device__ __forceinline__ C warp_max(C v) { return dev::warp_reduce_max(v); }
// Whole-block reductions (see block_reduce.cuh for the calling rules).
template <typename C> __device__ __forceinline__ C block_sum(C v) { return dev::block_reduce_sum(v); }
template <typename C> __device__ __forceinline__ C block_max(C v) { return dev::block_reduce_max(v); }

// Element offsets of up to N strided tensors walked in the row-major order of
// one shape (at most 8 dims), passed to kernels by value.
constexpr int kMaxDims = 8;
template <int N> struct Offsets {
  int rank = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};
  __device__ __forceinline__ void at(int64_t linear, int64_t (&off)[N]) const {
#pragma unroll
    for (int t = 0; t < N; ++t) off[t] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t s = shape[d];
      const int64_t c = linear % s;
      linear /= s;
#pragma unroll
      for (int t = 0; t < N; ++t) off[t] += c * strides[t][d];
    }
  }
};

}  // namespace anvil::cuda::nn
