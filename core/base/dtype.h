#pragma once
/// @file
/// The dtypes a tensor can hold, their names, sizes and promotion rules, and
/// the one switch from a DType to its C++ type (visit_dtype).
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "core/base/half.h"

namespace anvil {

/// The element types a tensor can hold.
enum class DType : uint8_t { Float32, Float64, Float16, BFloat16, Int32, Int64, UInt8, Bool };

inline constexpr DType kFloat32 = DType::Float32;  ///< 32-bit IEEE float, the default dtype.
inline constexpr DType kFloat64 = DType::Float64;  ///< 64-bit IEEE float.
inline constexpr DType kFloat16 = DType::Float16;  ///< IEEE half precision (anvil::Half).
/// bfloat16 (anvil::BFloat16): float32's range, 8 bits of mantissa.
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kInt32 = DType::Int32;  ///< 32-bit signed integer.
inline constexpr DType kInt64 = DType::Int64;  ///< 64-bit signed integer, the dtype of indices.
inline constexpr DType kUInt8 = DType::UInt8;  ///< 8-bit unsigned integer.
inline constexpr DType kBool = DType::Bool;  ///< Boolean (one byte per element).
/// libtorch's names for the same dtypes, so ported code keeps its spelling.
inline constexpr DType kFloat = DType::Float32;
inline constexpr DType kDouble = DType::Float64;  ///< libtorch's name for kFloat64.
inline constexpr DType kHalf = DType::Float16;  ///< libtorch's name for kFloat16.
inline constexpr DType kInt = DType::Int32;  ///< libtorch's name for kInt32.
inline constexpr DType kLong = DType::Int64;  ///< libtorch's name for kInt64.
inline constexpr DType kByte = DType::UInt8;  ///< libtorch's name for kUInt8.

size_t itemsize(DType t);  ///< Bytes per element.
const char* dtype_name(DType t);  ///< "float32", ... as PyTorch spells them
/// The dtype named "float32", "int64", ... (dtype_name's inverse); throws on an unknown name.
DType dtype_from_name(const std::string& name);
/// Whether `t` is a floating-point dtype (float32, float64, float16, bfloat16).
inline bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}
inline bool is_integral(DType t) { return !is_floating(t); }  ///< bool counts as integral
/// The dtype of a binary op's result, following PyTorch's category rules
/// (bool < integer < floating; within a category the wider type wins).
DType promote(DType a, DType b);
std::ostream& operator<<(std::ostream& os, DType t);  ///< Prints dtype_name(t).

/// Maps a C++ type to its DType: dtype_of<float>::value is kFloat32.
template <typename T> struct dtype_of;
/// float is DType::Float32.
template <> struct dtype_of<float> {
  static constexpr DType value = DType::Float32;  ///< DType::Float32
};
/// double is DType::Float64.
template <> struct dtype_of<double> {
  static constexpr DType value = DType::Float64;  ///< DType::Float64
};
/// Half is DType::Float16.
template <> struct dtype_of<Half> {
  static constexpr DType value = DType::Float16;  ///< DType::Float16
};
/// BFloat16 is DType::BFloat16.
template <> struct dtype_of<BFloat16> {
  static constexpr DType value = DType::BFloat16;  ///< DType::BFloat16
};
/// int32_t is DType::Int32.
template <> struct dtype_of<int32_t> {
  static constexpr DType value = DType::Int32;  ///< DType::Int32
};
/// int64_t is DType::Int64.
template <> struct dtype_of<int64_t> {
  static constexpr DType value = DType::Int64;  ///< DType::Int64
};
/// uint8_t is DType::UInt8.
template <> struct dtype_of<uint8_t> {
  static constexpr DType value = DType::UInt8;  ///< DType::UInt8
};
/// bool is DType::Bool.
template <> struct dtype_of<bool> {
  static constexpr DType value = DType::Bool;  ///< DType::Bool
};

/// Calls f(T{}) with T the C++ type of dtype t: the one place a dtype switch lives.
template <typename F> decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Float32:
      return f(float{});
    case DType::Float64:
      return f(double{});
    case DType::Float16:
      return f(Half{});
    case DType::BFloat16:
      return f(BFloat16{});
    case DType::Int32:
      return f(int32_t{});
    case DType::Int64:
      return f(int64_t{});
    case DType::UInt8:
      return f(uint8_t{});
    case DType::Bool:
      return f(bool{});
  }
  return f(float{});
}

}  // namespace anvil
