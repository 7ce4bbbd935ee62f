#pragma once
/// @file
/// Floating point to integer conversion, defined for every input and the same
/// on every backend (the CPU, CUDA kernels, the emulated GPU):
///
///     1. truncate toward zero to int64, saturating: NaN -> 0, +inf and values
///        at or above 2^63 -> INT64_MAX, -inf and values below -2^63 -> INT64_MIN;
///     2. narrow to the target type as integer casts do (two's complement wrap),
///        so -1.0 -> uint8 255 as in PyTorch, 300.0 -> uint8 44.
///
/// A bare static_cast is undefined in C++ for NaN, infinities and out-of-range
/// values, and differs in practice: x86 gives INT64_MIN, a GPU's cvt.rzi
/// gives 0 for NaN and saturates. PyTorch leaves these cases undefined too;
/// anvil pins them down so that both backends agree bit for bit.
/// (Conversion to bool is not covered here: it is "!= 0", so NaN -> true.)
#include <cstdint>
#include <type_traits>

#include "core/base/host_device.h"

namespace anvil {

/// Truncates toward zero to int64, saturating: NaN gives 0, out-of-range values and infinities the nearest bound.
template <typename F> ANVIL_HD int64_t float_to_int64(F v) {
  static_assert(std::is_floating_point_v<F>, "float_to_int64 takes float or double");
  if (v != v) return 0;  // NaN
  if (v >= F(9223372036854775808.0)) return INT64_MAX;  // 2^63 and up, +inf
  if (v < F(-9223372036854775808.0)) return INT64_MIN;  // below -2^63, -inf
  return static_cast<int64_t>(v);
}

/// float_to_int64, then narrowed (wrapping) to the integer type To.
template <typename To, typename F> ANVIL_HD To float_to_int(F v) { return static_cast<To>(float_to_int64(v)); }

}  // namespace anvil
