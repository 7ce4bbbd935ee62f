#pragma once
/// @file
/// A tensor's sizes, one per dim (also used for strides, in elements), and
/// the strides of a row-major contiguous layout of a shape.
#include <concepts>
#include <cstdint>
#include <vector>

namespace anvil {

/// A tensor's sizes, one per dim; also its strides, in elements.
using Shape = std::vector<int64_t>;

/// One dim given as an integer where ops take a Shape of dims, as libtorch's
/// IntArrayRef accepts one: x.sum(1), mean(x, -1, true). Overloads take it as
/// a template parameter, so that a braced list (x.sum({0, 1}), x.sum({1}),
/// x.sum({})) cannot be deduced as one and still means the Shape form.
template <typename I>
concept DimIndex = std::integral<I> && !std::same_as<I, bool>;

/// The strides of a row-major contiguous tensor of `shape` (a size-0 dim counts as 1).
inline Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    strides[d] = s;
    s *= shape[d] > 0 ? shape[d] : 1;
  }
  return strides;
}

}  // namespace anvil
