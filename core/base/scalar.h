#pragma once
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
  enum class Kind : uint8_t { Int, Float, Bool };
  Scalar() = default;
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
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}  // NOLINT
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::Float; }
  double to_double() const { return d_; }
  int64_t to_int() const { return i_; }
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

template <> inline double Scalar::to<double>() const { return d_; }
inline std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  return s.is_floating() ? (os << s.to_double()) : (os << s.to_int());
}

}  // namespace anvil
