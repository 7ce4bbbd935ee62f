#pragma once
/// @file
/// Scalar: a number as an op argument (`x + 1`, `masked_fill(m, 0.5)`), with the
/// kind it was written in.
#include <cstdint>
#include <ostream>
#include <type_traits>

#include "core/base/dtype.h"
#include "core/base/float_to_int.h"

namespace anvil {

/// A number that remembers whether it was given as an integer, a float or a
/// bool, so that `t + 1` keeps t's integer dtype and `t + 0.5` promotes it.
class Scalar {
 public:
  /// How the number was given.
  enum class Kind : uint8_t { Int, Float, Bool };
  Scalar() = default;
  /// From any arithmetic value: a bool, an integer or a floating value keeps its kind.
  template <typename T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Scalar(T v) {  // NOLINT: implicit from any number
    if constexpr (std::is_same_v<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v;
      d_ = v;
    } else if constexpr (std::is_integral_v<T>) {
      kind_ = Kind::Int;
      i_ = static_cast<int64_t>(v);
      d_ = static_cast<double>(v);
    } else {
      kind_ = Kind::Float;
      d_ = static_cast<double>(v);
      i_ = float_to_int64(d_);
    }
  }
  /// A float16 value, as a Float.
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}  // NOLINT
  /// A bfloat16 value, as a Float.
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}  // NOLINT

  Kind kind() const { return kind_; }  ///< Int, Float or Bool.
  bool is_floating() const { return kind_ == Kind::Float; }  ///< Whether it was given as a floating value.
  double to_double() const { return d_; }  ///< The value as a double.
  int64_t to_int() const { return i_; }  ///< The value as int64 (a floating value truncated, saturating).
  /// The value as T: integers convert without passing through double, floats through float.
  template <typename T> T to() const {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(kind_ == Kind::Float ? float_to_int64(d_) : i_);
    else
      return static_cast<T>(static_cast<float>(d_));
  }
  /// The dtype a tensor made from this scalar alone would have.
  DType default_dtype() const { return kind_ == Kind::Float ? kFloat32 : kind_ == Kind::Int ? kInt64 : kBool; }

 private:
  Kind kind_ = Kind::Int;
  int64_t i_ = 0;
  double d_ = 0.0;
};

template <> inline double Scalar::to<double>() const { return d_; }  ///< The double itself, not rounded through float.
/// Prints the value as its kind: 3, 0.5.
inline std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  return s.is_floating() ? (os << s.to_double()) : (os << s.to_int());
}

}  // namespace anvil
