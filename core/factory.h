#pragma once
/// @file
/// Tensor factories. Random ones draw from the global Philox generator
/// (core/random.h), so a seed gives the same numbers on every device.
#include <concepts>
#include <vector>

#include "core/tensor.h"

namespace anvil {

Tensor empty(const Shape& shape, const TensorOptions& options = {});  ///< Uninitialised memory of `shape`.
Tensor zeros(const Shape& shape, const TensorOptions& options = {});  ///< All zeros.
Tensor ones(const Shape& shape, const TensorOptions& options = {});  ///< All ones.
/// Every element `value`; the dtype is value's kind (int64, float32, bool) unless options say otherwise.
Tensor full(const Shape& shape, const Scalar& value, const TensorOptions& options = {});
Tensor scalar_tensor(const Scalar& value, const TensorOptions& options = {});  ///< A 0-d tensor holding `value`.
///@{
/// Like PyTorch, integer arguments give int64 and floating ones float32.
Tensor arange(double end, const TensorOptions& options = {});
Tensor arange(double start, double end, double step = 1.0, const TensorOptions& options = {});
template <std::integral I> Tensor arange(I end, const TensorOptions& options = kInt64) {
  return arange(0.0, static_cast<double>(end), 1.0, options);
}
template <std::integral I> Tensor arange(I start, I end, I step = 1, const TensorOptions& options = kInt64) {
  return arange(static_cast<double>(start), static_cast<double>(end), static_cast<double>(step), options);
}
///@}
Tensor eye(int64_t n, const TensorOptions& options = {});  ///< The n x n identity matrix.
Tensor rand(const Shape& shape, const TensorOptions& options = {});  ///< uniform [0, 1)
Tensor randn(const Shape& shape, const TensorOptions& options = {});  ///< standard normal
/// Integers uniform in [low, high).
Tensor randint(int64_t low, int64_t high, const Shape& shape, const TensorOptions& options = kInt64);
Tensor empty_like(const Tensor& t);  ///< empty() with t's shape, dtype and device.
Tensor zeros_like(const Tensor& t);  ///< zeros() with t's shape, dtype and device.
Tensor ones_like(const Tensor& t);  ///< ones() with t's shape, dtype and device.
Tensor full_like(const Tensor& t, const Scalar& value);  ///< full() with t's shape, dtype and device.
Tensor rand_like(const Tensor& t);  ///< rand() with t's shape, dtype and device.
Tensor randn_like(const Tensor& t);  ///< randn() with t's shape, dtype and device.

/// Copies host values into a new tensor of `shape` (default: 1-D). The dtype is
/// T's unless options say otherwise.
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape = {},
                   const TensorOptions& options = dtype_of<T>::value);
Tensor tensor(std::initializer_list<double> values, const TensorOptions& options = {});  ///< 1-D
/// Wraps memory the caller owns (no copy). `release`, if given, runs when the
/// last tensor using it is gone.
Tensor from_blob(void* data, const Shape& shape, const TensorOptions& options = {},
                 std::function<void(void*)> release = {});

}  // namespace anvil
