#pragma once
/// @file
/// Size2: a (height, width) pair that also accepts one number for both, so
/// options read like PyTorch's: `.kernel_size = 3` or `.kernel_size = {3, 5}`.
#include <array>
#include <cstdint>
#include <string>

namespace anvil::nn {

/// A (height, width) pair that converts from one number for both, as PyTorch's int-or-tuple arguments.
struct Size2 {
  ///@{
  /// height and width
  int64_t h = 0, w = 0;
  ///@}
  /// Both sizes `both` (implicit: `.kernel_size = 3`).
  Size2(int64_t both) : h(both), w(both) {}  // NOLINT: implicit, as PyTorch's int-or-tuple
  Size2(int64_t height, int64_t width) : h(height), w(width) {}  ///< Height and width apart.
  std::array<int64_t, 2> array() const { return {h, w}; }  ///< {h, w}.
  bool operator==(const Size2&) const = default;  ///< Same height and width.
  /// "(h, w)", as PyTorch prints a tuple.
  std::string str() const {  // "(3, 3)", as PyTorch prints a tuple
    std::string s = "(";
    s += std::to_string(h);
    s += ", ";
    s += std::to_string(w);
    s += ')';
    return s;
  }
};

}  // namespace anvil::nn
