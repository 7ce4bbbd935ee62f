// float_to_int: the one definition of floating -> integer conversion that the
// CPU kernels, the CUDA kernels and Scalar share (core/base/float_to_int.h).
#include "core/base/float_to_int.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/base/scalar.h"

namespace anvil {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

TEST(FloatToInt, SpecialValuesSaturateOrGoToZero) {
  EXPECT_EQ(float_to_int64(kNan), 0);
  EXPECT_EQ(float_to_int64(-kNan), 0);
  EXPECT_EQ(float_to_int64(kInf), INT64_MAX);
  EXPECT_EQ(float_to_int64(-kInf), INT64_MIN);
  EXPECT_EQ(float_to_int64(1e30), INT64_MAX);
  EXPECT_EQ(float_to_int64(-1e30), INT64_MIN);
  EXPECT_EQ(float_to_int64(std::nanf("")), 0);
  EXPECT_EQ(float_to_int64(std::numeric_limits<float>::infinity()), INT64_MAX);
  EXPECT_EQ(float_to_int64(3e19f), INT64_MAX);
}

TEST(FloatToInt, EdgesOfInt64) {
  EXPECT_EQ(float_to_int64(9223372036854775808.0), INT64_MAX);  // 2^63: just out of range
  EXPECT_EQ(float_to_int64(-9223372036854775808.0), INT64_MIN);  // -2^63: exactly representable
  EXPECT_EQ(float_to_int64(9223372036854774784.0), 9223372036854774784);  // the largest double below 2^63
  EXPECT_EQ(float_to_int64(-9223372036854774784.0), -9223372036854774784);
}

TEST(FloatToInt, InRangeTruncatesTowardZeroThenWraps) {
  EXPECT_EQ(float_to_int64(2.9), 2);
  EXPECT_EQ(float_to_int64(-2.9), -2);
  EXPECT_EQ(float_to_int64(-0.5f), 0);
  EXPECT_EQ(float_to_int<uint8_t>(-1.0), 255);  // as in PyTorch
  EXPECT_EQ(float_to_int<uint8_t>(300.7), 44);  // 300 mod 256
  EXPECT_EQ(float_to_int<int32_t>(3e9), static_cast<int32_t>(int64_t{3000000000}));
  EXPECT_EQ(float_to_int<int32_t>(kNan), 0);
  EXPECT_EQ(float_to_int<int32_t>(kInf), -1);  // INT64_MAX wrapped to 32 bits
  EXPECT_EQ(float_to_int<uint8_t>(-kInf), 0);  // INT64_MIN wrapped to 8 bits
}

TEST(FloatToInt, ScalarUsesTheSameRule) {
  EXPECT_EQ(Scalar(kNan).to_int(), 0);
  EXPECT_EQ(Scalar(kInf).to_int(), INT64_MAX);
  EXPECT_EQ(Scalar(-kInf).to<int32_t>(), 0);  // INT64_MIN wrapped to 32 bits
  EXPECT_EQ(Scalar(-1.5).to<uint8_t>(), 255);
}

}  // namespace
}  // namespace anvil
