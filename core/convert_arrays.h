#pragma once
// float32 <-> float16 / bfloat16 over contiguous host arrays, for the layers
// above core that handle raw buffers rather than tensors (the reduce
// functions distributed/ hands to Gloo, which add 16-bit floats in float).
// Bit-identical to the scalar conversions of core/base/half.h; the CPU
// backend vectorises them where it has vector kernels.
//
//   float block[512];
//   convert_array(block, halves, n);       // n <= 512 float16 -> float32
//   for (int64_t i = 0; i < n; ++i) block[i] += other[i];
//   convert_array(halves, block, n);       // and back, rounded once
//
// The CPU backend implements them (kernels/convert_arrays.h, in
// kernels/cpu/convert_arrays.cpp); this header re-exports its declarations
// so that nothing above core includes a kernels/ header.
#include "kernels/convert_arrays.h"  // IWYU pragma: export (convert_array, convert_array_vectorized)
