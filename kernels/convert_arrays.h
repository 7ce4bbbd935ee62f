#pragma once
// float32 <-> float16 / bfloat16 over contiguous host arrays, bit-identical to
// the scalar conversions of core/base/half.h (round to nearest even, overflow
// to inf, NaN kept NaN). The CPU backend implements them with its vector
// conversions (kernels/cpu/convert_arrays.cpp over vector_convert.h). Above
// kernels/, include core/convert_arrays.h, which re-exports these.
#include <cstdint>

#include "core/base/half.h"

namespace anvil {

void convert_array(float* out, const Half* in, int64_t n);
void convert_array(Half* out, const float* in, int64_t n);
void convert_array(float* out, const BFloat16* in, int64_t n);
void convert_array(BFloat16* out, const float* in, int64_t n);

// Whether convert_array runs the CPU backend's vector kernels: built with
// Highway and not switched off with ANVIL_CPU_VECTOR=off. Otherwise it is a
// scalar loop, and a caller with a scalar loop of its own may run that.
bool convert_array_vectorized();

}  // namespace anvil
