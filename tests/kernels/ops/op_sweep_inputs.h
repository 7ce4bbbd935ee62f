#pragma once
// Inputs for the sweeps over the op tables (test_op_tables.cpp and the
// CUDA sweep): random values with the special ones of the dtype written over
// the first elements: +-0, +-inf, NaN, +-subnormals, the largest finite
// values, halves (round's ties) for floating dtypes; the extremes, 0 and +-1
// for integers; both values for bool.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/ops.h"

namespace anvil::test {

// The special values of a dtype, as doubles (exactly representable in it).
inline std::vector<double> special_values(DType dtype) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  if (dtype == kBool) return {0, 1};
  if (dtype == kUInt8) return {0, 1, 255, 128};
  if (dtype == kInt32) return {0, 1, -1, double(INT32_MIN), double(INT32_MAX), -7};
  if (dtype == kInt64) return {0, 1, -1, double(INT64_MIN), 4611686018427387904.0 /* 2^62 */, -7};
  // Floating: the smallest subnormal and the largest finite value of each dtype.
  double subnormal = 4.9406564584124654e-324, largest = std::numeric_limits<double>::max();
  if (dtype == kFloat32) subnormal = 1.4012984643e-45, largest = std::numeric_limits<float>::max();
  if (dtype == kFloat16) subnormal = 5.9604644775390625e-08, largest = 65504.0;
  if (dtype == kBFloat16) subnormal = 9.18354961579912115600575419705e-41, largest = 3.3895313892515355e38;
  return {0.0, -0.0, inf, -inf, nan, subnormal, -subnormal, largest, -largest, 0.5, -0.5, 1.5, 2.5, -2.5};
}

// A [rows, cols] tensor of `dtype`: normal random values (integers: rounded
// from 10x that) with special_values(dtype) over the first elements.
inline Tensor sweep_input(DType dtype, int64_t rows, int64_t cols, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(static_cast<size_t>(rows * cols));
  for (double& v : values) {
    const double r = normal(gen);
    v = dtype == kBool ? double(r > 0) : is_floating(dtype) ? r : std::round(10 * r);
    if (dtype == kUInt8) v = std::abs(v);
  }
  const std::vector<double> specials = special_values(dtype);
  for (size_t i = 0; i < specials.size() && i < values.size(); ++i) values[i] = specials[i];
  return from_vector(values, {rows, cols}, dtype);
}

}  // namespace anvil::test
