#pragma once
// A tensor's sizes, one per dim (also used for strides, in elements), and
// the strides of a row-major contiguous layout of a shape.
#include <cstdint>
#include <vector>

namespace anvil {

using Shape = std::vector<int64_t>;

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
