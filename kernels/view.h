#pragma once
/// @file
/// A View is what a kernel sees of a tensor: a data pointer, a dtype, and a
/// shape with strides (in elements). No ownership, no autograd.
#include <cstdint>

#include "core/base/dtype.h"
#include "core/base/shape.h"

namespace anvil {

/// What a kernel sees of a tensor: data pointer, dtype, shape and strides in elements; no ownership, no autograd.
struct View {
  void* data = nullptr;  ///< the first element (the tensor's offset applied)
  DType dtype = kFloat32;  ///< the element type
  Shape shape;  ///< sizes, one per dim
  Shape strides;  ///< strides in elements, one per dim
  int device_index = 0;  ///< which GPU the data lives on (0 for the CPU)

  int64_t dim() const { return static_cast<int64_t>(shape.size()); }  ///< Number of dims.
  /// Number of elements (1 for a 0-d view).
  int64_t numel() const {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    return n;
  }
  /// Whether the strides are those of a row-major layout (size-1 dims may have any stride).
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int64_t d = dim() - 1; d >= 0; --d) {
      if (shape[d] == 0) return true;  // no elements: any strides describe them
      if (shape[d] != 1 && strides[d] != expected) return false;
      expected *= shape[d];
    }
    return true;
  }
  /// The data as T* (unchecked: the caller knows the dtype).
  template <typename T> T* ptr() const { return static_cast<T*>(data); }
};

}  // namespace anvil
