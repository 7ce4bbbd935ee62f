#pragma once
// anvil::cuda::kit, the small device helpers of the row-wise and indexing
// kernels (softmax, layer_norm, cross_entropy, random, indexing, optim): short names for the shared conversions and
// reductions. Strided operands use dev::OffsetCalculator
// (device/offset_calculator.cuh, filled by kernels/cuda/launch/strided_offsets.h).
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device/block_reduce.cuh"
#include "kernels/cuda/device/dtype.cuh"

namespace anvil::cuda::kit {

// Thin names over the shared device vocabulary (dtype.cuh, block_reduce.cuh).
using dev::acc_t;  // float for float/16-bit floats, double for double

template <typename C, typename T> __device__ __forceinline__ C load_as(T v) { return dev::cast<C>(v); }
template <typename T, typename C> __device__ __forceinline__ T store_as(C v) { return dev::cast<T>(v); }

template <typename C> __device__ __forceinline__ C warp_sum(C v) { return dev::warp_reduce_sum(v); }
template <typename C> __device__ __forceinline__ C warp_max(C v) { return dev::warp_reduce_max(v); }
// Whole-block reductions (see block_reduce.cuh for the calling rules).
template <typename C> __device__ __forceinline__ C block_sum(C v) { return dev::block_reduce_sum(v); }
template <typename C> __device__ __forceinline__ C block_max(C v) { return dev::block_reduce_max(v); }

}  // namespace anvil::cuda::kit
