// convert_array (core/convert_arrays.h), the conversions layers above core
// use on raw buffers: every 16-bit pattern to float32 and back, and float32
// values around the rounding and overflow boundaries, against the scalar
// conversions of core/base/half.h, bit for bit (NaN only as NaN). The vector
// kernels behind it are checked on every instruction set in
// tests/kernels/cpu/test_cpu_half_convert.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/convert_arrays.h"

namespace anvil {
namespace {

template <typename T> void check_every_pattern_round_trips() {
  std::vector<T> in(65536);
  for (uint32_t b = 0; b < 65536; ++b) in[b].bits = static_cast<uint16_t>(b);
  std::vector<float> wide(in.size());
  convert_array(wide.data(), in.data(), static_cast<int64_t>(in.size()));
  std::vector<T> back(in.size());
  convert_array(back.data(), wide.data(), static_cast<int64_t>(wide.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = static_cast<float>(in[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(wide[i])) << "pattern " << i;
      ASSERT_TRUE(std::isnan(static_cast<float>(back[i]))) << "pattern " << i;
    } else {
      ASSERT_EQ(float_bits(wide[i]), float_bits(want)) << "pattern " << i;
      ASSERT_EQ(back[i].bits, in[i].bits) << "pattern " << i;
    }
  }
}

template <typename T> void check_rounding_matches_scalar() {
  std::vector<float> in = {0.0f,
                           -0.0f,
                           1.0f,
                           -1.5f,
                           65504.0f,
                           65520.0f,
                           1e30f,
                           -1e30f,
                           1e-8f,
                           3.0e-5f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::denorm_min()};
  for (uint32_t m = 0; m < 64; ++m) in.push_back(bits_float(0x3f800000u + (m << 7) + (m & 3)));  // ties and near-ties
  std::vector<T> out(in.size());
  convert_array(out.data(), in.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i].bits, T(in[i]).bits) << "value " << in[i];
}

TEST(ConvertArrays, Float16EveryPatternRoundTrips) { check_every_pattern_round_trips<Half>(); }
TEST(ConvertArrays, BFloat16EveryPatternRoundTrips) { check_every_pattern_round_trips<BFloat16>(); }
TEST(ConvertArrays, Float16RoundingMatchesTheScalarConversion) { check_rounding_matches_scalar<Half>(); }
TEST(ConvertArrays, BFloat16RoundingMatchesTheScalarConversion) { check_rounding_matches_scalar<BFloat16>(); }

}  // namespace
}  // namespace anvil
