#pragma once
// Host side: the one switch from an anvil DType to the CUDA storage type of
// its elements (device/dtype.cuh lists them). Include from .cu files.
//
//   visit_device_dtype(view.dtype, [&](auto tag) {
//     using T = decltype(tag);                    // float, double, __half, __nv_bfloat16,
//     launch_kernel(my_kernel<T>, ...)(...);      // int32_t, int64_t, uint8_t or bool
//   });
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "core/base/dtype.h"
#include "core/base/error.h"

namespace anvil::cuda {

template <typename F> decltype(auto) visit_device_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Float16:
      return f(__half{});
    case DType::BFloat16:
      return f(__nv_bfloat16{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::UInt8:
      return f(uint8_t{});
    case DType::Bool:
      return f(bool{});
  }
  fail("cuda: unknown dtype ", static_cast<int>(t));
}

// Only the floating dtypes (float, double, __half, __nv_bfloat16); others throw
// "<op>: not supported for dtype <dtype> (floating dtypes only)".
template <typename F> decltype(auto) visit_floating_device_dtype(const char* op, DType t, F&& f) {
  switch (t) {
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Float16:
      return f(__half{});
    case DType::BFloat16:
      return f(__nv_bfloat16{});
    default:
      break;
  }
  fail(op, ": not supported for dtype ", t, " (floating dtypes only)");
}

}  // namespace anvil::cuda
