#pragma once
// What the CUDA elementwise kernels share with the op tables: the dtype
// domains, GELU's constants (for the binary functors and fused backwards) and
// UnaryMap, the conversion wrapper around a unary table functor
// (kernels/ops/unary_ops.h). Device-only header.
#include <cstdint>
#include <type_traits>

#include "kernels/cuda/device/dtype.cuh"
#include "kernels/ops/math.h"
#include "kernels/ops/op_traits.h"

namespace anvil::cuda::dev {

// The op tables' dtype domains (kernels/ops/op_traits.h) and GELU's constants.
using ops::accepts;
using ops::Domain;
using ops::math::kGeluCoeff;
using ops::math::kInvSqrt2;
using ops::math::kInvSqrt2Pi;
using ops::math::kSqrt2OverPi;

// out = Out(op(C(x))): the conversion wrapper every unary launch uses.
template <typename T, typename Out, typename Op>
struct UnaryMap {
  Op op;
  __device__ __forceinline__ Out operator()(T x) const { return cast<Out>(op(cast<compute_t<T>>(x))); }
};

}  // namespace anvil::cuda::dev
