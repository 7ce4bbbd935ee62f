#pragma once
// Device-side vocabulary for anvil's dtypes: the CUDA type that stores each
// DType, the type arithmetic is done in, and value conversions that follow the
// CPU backend's rules exactly (kernels/cpu/strided_loop.h cast_value):
//   - 16-bit floats go through float;
//   - anything to bool is "!= 0" (so NaN -> true);
//   - floating to integer saturates to int64, then wraps (core/base/float_to_int.h:
//     NaN -> 0, +inf -> INT64_MAX, -1.0 -> uint8 255);
//   - everything else is a plain static_cast.
// Device-only apart from float_to_int.h, which both sides share. The host-side
// DType -> storage type switch is kernels/cuda/launch/dtype_dispatch.h.
//
//   DType     storage type     compute_t (elementwise math)   acc_t (sums)
//   Float32   float            float                          float
//   Float64   double           double                         double
//   Float16   __half           float                          float
//   BFloat16  __nv_bfloat16    float                          float
//   Int32     int32_t          int32_t                        int64_t
//   Int64     int64_t          int64_t                        int64_t
//   UInt8     uint8_t          uint8_t                        int64_t
//   Bool      bool             bool                           int64_t
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/base/float_to_int.h"
#include "kernels/ops/math.h"

namespace anvil::cuda::dev {

template <typename T> inline constexpr bool is_half_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;
// Floating storage types (float, double, __half, __nv_bfloat16).
template <typename T> inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_half_v<T>;

// The type elementwise math is done in: float for 16-bit floats, the type
// itself otherwise (the CPU's compute_t).
template <typename T> struct Compute { using type = T; };
template <> struct Compute<__half> { using type = float; };
template <> struct Compute<__nv_bfloat16> { using type = float; };
template <typename T> using compute_t = typename Compute<T>::type;

// The type sums and products accumulate in: float for float/16-bit floats,
// double for double, int64 for integers and bool (the CPU's sum semantics).
template <typename T> struct Acc { using type = int64_t; };
template <> struct Acc<float> { using type = float; };
template <> struct Acc<double> { using type = double; };
template <> struct Acc<__half> { using type = float; };
template <> struct Acc<__nv_bfloat16> { using type = float; };
template <typename T> using acc_t = typename Acc<T>::type;

// ---- conversions ----

template <typename T> __device__ __forceinline__ float to_float(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __bfloat162float(v);
  else if constexpr (std::is_same_v<T, bool>)
    return v ? 1.0f : 0.0f;
  else
    return static_cast<float>(v);
}

// value -> To with the CPU's rules (see the top of the file).
template <typename To, typename From> __device__ __forceinline__ To cast(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_half_v<From>) {
    return cast<To>(to_float(v));
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(static_cast<float>(v));  // double rounds to float first, as on the CPU
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return ::anvil::float_to_int<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename T> __device__ __forceinline__ T from_float(float v) { return cast<T>(v); }

// Loads and stores converting to/from the compute or accumulate type in one
// step: load_as<float>(p) reads any dtype as float.
template <typename C, typename T> __device__ __forceinline__ C load_as(const T* p) { return cast<C>(*p); }
template <typename T, typename C> __device__ __forceinline__ void store_from(T* p, C v) { *p = cast<T>(v); }

__device__ __forceinline__ float load_float(const __half* p) { return __half2float(*p); }
__device__ __forceinline__ float load_float(const __nv_bfloat16* p) { return __bfloat162float(*p); }
template <typename T> __device__ __forceinline__ float load_float(const T* p) { return to_float(*p); }
template <typename T> __device__ __forceinline__ void store_float(T* p, float v) { *p = cast<T>(v); }

// ---- limits (for max/min identities) ----

template <typename T> __device__ __forceinline__ T lowest() {
  if constexpr (std::is_same_v<T, float>)
    return -__int_as_float(0x7f800000);  // -inf
  else if constexpr (std::is_same_v<T, double>)
    return -__longlong_as_double(0x7ff0000000000000LL);
  else if constexpr (std::is_same_v<T, bool>)
    return false;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return 0;
  else if constexpr (std::is_same_v<T, int32_t>)
    return INT32_MIN;
  else if constexpr (std::is_same_v<T, int64_t>)
    return INT64_MIN;
  else
    return cast<T>(-__int_as_float(0x7f800000));
}
template <typename T> __device__ __forceinline__ T highest() {
  if constexpr (std::is_same_v<T, float>)
    return __int_as_float(0x7f800000);  // +inf
  else if constexpr (std::is_same_v<T, double>)
    return __longlong_as_double(0x7ff0000000000000LL);
  else if constexpr (std::is_same_v<T, bool>)
    return true;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return 255;
  else if constexpr (std::is_same_v<T, int32_t>)
    return INT32_MAX;
  else if constexpr (std::is_same_v<T, int64_t>)
    return INT64_MAX;
  else
    return cast<T>(__int_as_float(0x7f800000));
}

// NaN test (false for integers) and NaN-propagating max/min (a NaN in either
// wins): the op tables' own, so reductions and maximum/minimum agree.
using ops::math::nan_max;
using ops::math::nan_min;
template <typename C> __device__ __forceinline__ bool is_nan(C x) { return ops::math::isnan(x); }

}  // namespace anvil::cuda::dev
