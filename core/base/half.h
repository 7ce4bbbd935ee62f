#pragma once
/// @file
/// 16-bit floating types for host code. Storage is the raw bit pattern; math is
/// done in float. Conversions round to nearest even, as the hardware does.
#include <cstdint>
#include <cstring>

namespace anvil {

/// A float's bit pattern.
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
/// The float with bit pattern `u`.
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// IEEE half precision (float16) on the host: the bits, converted to and from float.
struct Half {
  uint16_t bits = 0;  ///< the raw IEEE binary16 pattern
  Half() = default;
  /// Rounds `f` to the nearest half, ties to even (implicit, like a float).
  Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a float
  operator float() const { return to_float(bits); }  ///< The exact float value.

  /// The half nearest to `f`, ties to even; infinities and NaN carried over, overflow to infinity.
  static uint16_t from_float(float f) {
    uint32_t x = float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u)  // inf or nan
      return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow
    if (abs < 0x38800000u) {  // subnormal or zero in half
      // Add 0.5 (as float) so the FPU does the rounding of the shifted mantissa.
      float v = bits_float(abs) + 0.5f;
      return static_cast<uint16_t>(sign | (float_bits(v) - 0x3f000000u));
    }
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round
    return static_cast<uint16_t>(sign | (abs >> 13));
  }
  /// The exact float of half bits `h` (subnormals included).
  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
      float v = static_cast<float>(mant) * (1.0f / 16777216.0f);  // mant * 2^-24
      return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

/// bfloat16 on the host: float32's top 16 bits, converted to and from float.
struct BFloat16 {
  uint16_t bits = 0;  ///< float32's sign, exponent and top 7 mantissa bits
  BFloat16() = default;
  /// Rounds `f` to the nearest bfloat16, ties to even (implicit, like a float).
  BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return bits_float(static_cast<uint32_t>(bits) << 16); }  ///< The exact float value.

  /// The bfloat16 nearest to `f`, ties to even; NaN stays a quiet NaN.
  static uint16_t from_float(float f) {
    uint32_t x = float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
    return static_cast<uint16_t>(x >> 16);
  }
};

}  // namespace anvil
