// dtype vocabulary: 16-bit float conversions, promotion, device names, and the
// Philox generator every backend draws from.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>

#include "core/base/device.h"
#include "core/base/dtype.h"
#include "core/base/error.h"
#include "core/base/half.h"
#include "core/base/philox.h"

namespace anvil {
namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// ---- independent references, written with double arithmetic -------------

// The value of a float bit pattern in double, treating the all-ones exponent
// as an ordinary binade: 0x7f800000 reads as 2^128, the "next float" after
// FLT_MAX, which is what round-to-nearest compares against at overflow.
double float_bits_value_unbounded(uint32_t b) {
  int exp_field = static_cast<int>((b >> 23) & 0xff);
  double mant = static_cast<double>(b & 0x7fffff);
  double v = exp_field == 0 ? std::ldexp(mant, -149) : std::ldexp(1.0 + mant / 8388608.0, exp_field - 127);
  return (b >> 31) ? -v : v;
}

// Nearest half (ties to even) of a finite or infinite float, computed by
// scaling to the half's quantum in double and letting nearbyint round.
uint16_t reference_half_bits(float f) {
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  double a = std::fabs(static_cast<double>(f));
  if (std::isinf(a)) return sign | 0x7c00;
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1)
  int exp = std::max(e - 1, -14);  // below 2^-14 halves are subnormal, quantum 2^-24
  double quantum = std::ldexp(1.0, exp - 10);
  double r = std::nearbyint(a / quantum);  // default rounding mode: ties to even
  uint32_t bits = (exp == -14 && r < 1024) ? static_cast<uint32_t>(r)
                                           : (static_cast<uint32_t>(exp + 15) << 10) + static_cast<uint32_t>(r - 1024);
  if (bits >= 0x7c00) bits = 0x7c00;  // overflow rounds to infinity
  return static_cast<uint16_t>(sign | bits);
}

double reference_half_value(uint16_t h) {
  int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0x1f)
    v = mant ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  else if (exp == 0)
    v = std::ldexp(mant, -24);
  else
    v = std::ldexp(1024 + mant, exp - 25);
  return (h & 0x8000) ? -v : v;
}

// Nearest bfloat16 (ties to even) of a non-nan float: pick the closer of the
// two bfloat16 neighbours by comparing distances in double.
uint16_t reference_bf16_bits(float f) {
  uint32_t x = to_bits(f);
  uint32_t lo = x & 0xffff0000u;
  uint32_t hi = lo + 0x10000u;  // the next bfloat16 away from zero
  if ((x & 0xffffu) == 0) return static_cast<uint16_t>(x >> 16);
  double v = std::fabs(float_bits_value_unbounded(x));
  double dlo = v - std::fabs(float_bits_value_unbounded(lo));
  double dhi = std::fabs(float_bits_value_unbounded(hi)) - v;
  if (dlo < dhi) return static_cast<uint16_t>(lo >> 16);
  if (dhi < dlo) return static_cast<uint16_t>(hi >> 16);
  return static_cast<uint16_t>(((lo >> 16) & 1u) ? hi >> 16 : lo >> 16);
}

bool half_is_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// ---- Half ------------------------------------------------------------------

TEST(Half, KnownBitPatterns) {
  struct Case {
    float value;
    uint16_t bits;
  };
  const Case cases[] = {
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {0.5f, 0x3800},
      {65504.0f, 0x7bff},
      {0.1f, 0x2e66},
      {1.0f / 3.0f, 0x3555},
      {-0.0f, 0x8000},
      {0.0f, 0x0000},
      {std::ldexp(1.0f, -14), 0x0400},  // smallest normal
      {std::ldexp(1.0f, -24), 0x0001},  // smallest subnormal
      {std::ldexp(1023.0f, -24), 0x03ff},  // largest subnormal
      {-std::ldexp(1.0f, -24), 0x8001},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Half(c.value).bits, c.bits) << c.value;
    EXPECT_EQ(static_cast<float>(Half(c.value)), static_cast<float>(reference_half_value(c.bits)));
  }
}

TEST(Half, RoundsToNearestEven) {
  // Exactly halfway cases go to the even mantissa; a hair above goes up.
  EXPECT_EQ(Half(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);  // 1 + half ulp -> 1
  EXPECT_EQ(Half(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);  // 1.5 ulp -> 2 ulp
  EXPECT_EQ(Half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)).bits, 0x3c01);
  EXPECT_EQ(Half(std::ldexp(1.0f, -25)).bits, 0x0000);  // subnormal tie -> 0
  EXPECT_EQ(Half(3 * std::ldexp(1.0f, -25)).bits, 0x0002);  // 1.5 -> 2
  EXPECT_EQ(Half(5 * std::ldexp(1.0f, -25)).bits, 0x0002);  // 2.5 -> 2
  EXPECT_EQ(Half(std::ldexp(1.0f, -25) * 1.001f).bits, 0x0001);
  EXPECT_EQ(Half(65519.0f).bits, 0x7bff);  // below the overflow tie
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);  // tie with 2^16 -> inf
  EXPECT_EQ(Half(1e10f).bits, 0x7c00);
  EXPECT_EQ(Half(-1e10f).bits, 0xfc00);
  EXPECT_EQ(Half(std::ldexp(1.0f, -30)).bits, 0x0000);  // underflow to zero
}

TEST(Half, InfinityAndNan) {
  EXPECT_EQ(Half(INFINITY).bits, 0x7c00);
  EXPECT_EQ(Half(-INFINITY).bits, 0xfc00);
  EXPECT_TRUE(half_is_nan(Half(NAN).bits));
  EXPECT_TRUE(half_is_nan(Half(from_bits(0x7f800001u)).bits));  // signalling nan stays nan
  EXPECT_TRUE(half_is_nan(Half(from_bits(0xffc00000u)).bits));
  EXPECT_TRUE(std::isinf(static_cast<float>(Half::to_float(0x7c00))));
  EXPECT_LT(Half::to_float(0xfc00), 0.0f);
  EXPECT_TRUE(std::isnan(Half::to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(Half::to_float(0x7c01)));
}

TEST(Half, EveryBitPatternDecodesAndRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    auto h = static_cast<uint16_t>(b);
    float f = Half::to_float(h);
    if (half_is_nan(h)) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << b;
      EXPECT_TRUE(half_is_nan(Half::from_float(f))) << std::hex << b;
      continue;
    }
    ASSERT_EQ(static_cast<double>(f), reference_half_value(h)) << std::hex << b;
    ASSERT_EQ(Half::from_float(f), h) << std::hex << b;
  }
}

TEST(Half, RandomFloatsMatchReferenceRounding) {
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) {
    uint32_t x = rng();
    if (i % 2 == 0) {
      // Concentrate on the exponents where halves live (and just around them).
      uint32_t exp = 100 + rng() % 46;  // 2^-27 .. 2^18
      x = (x & 0x807fffffu) | (exp << 23);
    }
    float f = from_bits(x);
    if (std::isnan(f)) continue;
    ASSERT_EQ(Half::from_float(f), reference_half_bits(f)) << std::hex << x;
  }
}

// ---- BFloat16 --------------------------------------------------------------

TEST(BFloat16, KnownBitPatterns) {
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(-2.0f).bits, 0xc000);
  EXPECT_EQ(BFloat16(3.14159265f).bits, 0x4049);
  EXPECT_EQ(BFloat16(-0.0f).bits, 0x8000);
  EXPECT_EQ(static_cast<float>(BFloat16(1.0f)), 1.0f);
  BFloat16 pi;
  pi.bits = 0x4049;
  EXPECT_EQ(static_cast<float>(pi), 3.140625f);
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(BFloat16(from_bits(0x3f808000u)).bits, 0x3f80);  // tie, even stays
  EXPECT_EQ(BFloat16(from_bits(0x3f818000u)).bits, 0x3f82);  // tie, odd goes up
  EXPECT_EQ(BFloat16(from_bits(0x3f808001u)).bits, 0x3f81);
  EXPECT_EQ(BFloat16(from_bits(0x3f807fffu)).bits, 0x3f80);
  EXPECT_EQ(BFloat16(from_bits(0xbf818000u)).bits, 0xbf82);  // negative tie
  EXPECT_EQ(BFloat16(from_bits(0x7f7f7fffu)).bits, 0x7f7f);
  EXPECT_EQ(BFloat16(from_bits(0x7f7fffffu)).bits, 0x7f80);  // FLT_MAX rounds to inf
  // Subnormals round the same way.
  EXPECT_EQ(BFloat16(from_bits(0x00008000u)).bits, 0x0000);
  EXPECT_EQ(BFloat16(from_bits(0x00018000u)).bits, 0x0002);
  EXPECT_EQ(BFloat16(from_bits(0x00008001u)).bits, 0x0001);
  EXPECT_EQ(BFloat16(from_bits(0x00010000u)).bits, 0x0001);
}

TEST(BFloat16, InfinityAndNan) {
  EXPECT_EQ(BFloat16(INFINITY).bits, 0x7f80);
  EXPECT_EQ(BFloat16(-INFINITY).bits, 0xff80);
  EXPECT_TRUE(bf16_is_nan(BFloat16(NAN).bits));
  EXPECT_TRUE(bf16_is_nan(BFloat16(from_bits(0x7f800001u)).bits));  // would truncate to inf
  EXPECT_TRUE(bf16_is_nan(BFloat16(from_bits(0xff800001u)).bits));
  EXPECT_TRUE(bf16_is_nan(BFloat16(from_bits(0x7fffffffu)).bits));  // would carry into sign
  BFloat16 nan;
  nan.bits = 0x7fc0;
  EXPECT_TRUE(std::isnan(static_cast<float>(nan)));
}

TEST(BFloat16, EveryBitPatternRoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    BFloat16 v;
    v.bits = static_cast<uint16_t>(b);
    float f = v;
    EXPECT_EQ(to_bits(f), b << 16);
    if (bf16_is_nan(v.bits)) continue;
    ASSERT_EQ(BFloat16(f).bits, v.bits) << std::hex << b;
  }
}

TEST(BFloat16, RandomFloatsMatchReferenceRounding) {
  std::mt19937 rng(11);
  for (int i = 0; i < 1000000; ++i) {
    uint32_t x = rng();
    if (i % 4 == 0) x &= 0xffff8000u | (rng() & 1u);  // many exact and near ties
    float f = from_bits(x);
    if (std::isnan(f)) continue;
    ASSERT_EQ(BFloat16::from_float(f), reference_bf16_bits(f)) << std::hex << x;
  }
}

// ---- dtype -----------------------------------------------------------------

TEST(DType, PromotionTableMatchesPyTorch) {
  // Rows and columns in this order; the table is PyTorch's promote_types.
  const DType order[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool};
  const DType f32 = kFloat32, f64 = kFloat64, f16 = kFloat16, bf = kBFloat16, i32 = kInt32, i64 = kInt64, u8 = kUInt8,
              b = kBool;
  const DType expected[8][8] = {
      /* f32 */ {f32, f64, f32, f32, f32, f32, f32, f32},
      /* f64 */ {f64, f64, f64, f64, f64, f64, f64, f64},
      /* f16 */ {f32, f64, f16, f32, f16, f16, f16, f16},
      /* bf  */ {f32, f64, f32, bf, bf, bf, bf, bf},
      /* i32 */ {f32, f64, f16, bf, i32, i64, i32, i32},
      /* i64 */ {f32, f64, f16, bf, i64, i64, i64, i64},
      /* u8  */ {f32, f64, f16, bf, i32, i64, u8, u8},
      /* b   */ {f32, f64, f16, bf, i32, i64, u8, b},
  };
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c)
      EXPECT_EQ(promote(order[r], order[c]), expected[r][c]) << order[r] << " with " << order[c];
}

TEST(DType, NamesSizesAndErrors) {
  const std::pair<DType, size_t> sizes[] = {{kFloat32, 4}, {kFloat64, 8}, {kFloat16, 2}, {kBFloat16, 2},
                                            {kInt32, 4},   {kInt64, 8},   {kUInt8, 1},   {kBool, 1}};
  for (auto [t, size] : sizes) {
    EXPECT_EQ(itemsize(t), size) << t;
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  }
  EXPECT_EQ(std::string(dtype_name(kBFloat16)), "bfloat16");
  EXPECT_EQ(dtype_from_name("BF16"), kBFloat16);
  EXPECT_EQ(dtype_from_name("I64"), kInt64);
  try {
    dtype_from_name("float17");
    FAIL() << "expected anvil::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("float17"), std::string::npos) << e.what();
  }
}

// ---- Device ----------------------------------------------------------------

TEST(Device, ParsesSpecs) {
  EXPECT_EQ(Device("cpu"), Device(DeviceType::CPU, 0));
  EXPECT_EQ(Device("cuda"), Device(DeviceType::CUDA, 0));
  EXPECT_EQ(Device("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device("cuda:12").index, 12);
  EXPECT_EQ(Device("cuda:3").str(), "cuda:3");
  EXPECT_EQ(Device("cpu").str(), "cpu");
  EXPECT_NE(Device("cuda:0"), Device("cuda:1"));
  EXPECT_NE(Device("cuda:0"), kCPU);
}

TEST(Device, BadSpecsNameTheSpec) {
  for (const char* spec : {"tpu", "", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", "cuda:1:2"}) {
    try {
      Device d(spec);
      ADD_FAILURE() << "'" << spec << "' parsed as " << d;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + spec + "'"), std::string::npos) << e.what();
    }
  }
}

// ---- Philox ----------------------------------------------------------------

// Philox4x32-10 with the full 128-bit counter, written from the paper
// (Salmon et al., SC'11), so the known-answer vectors with all counter words
// set can be checked, and our two-word-counter version compared against it.
std::array<uint32_t, 4> philox_full(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  const uint64_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = m0 * ctr[0], p1 = m1 * ctr[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0), hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
    key[0] += 0x9E3779B9u;  // golden ratio
    key[1] += 0xBB67AE85u;  // sqrt(3) - 1
  }
  return ctr;
}

std::array<uint32_t, 4> as_array(philox::Uint4 r) { return {r.x, r.y, r.z, r.w}; }

TEST(Philox, KnownAnswerVectors) {
  using A4 = std::array<uint32_t, 4>;
  // Random123's kat_vectors: counter and key all zero.
  EXPECT_EQ(as_array(philox::philox4x32(0, 0)), (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox_full({0, 0, 0, 0}, {0, 0}), (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  // All ones: our philox4x32 only sets two counter words, so check the full form.
  EXPECT_EQ(philox_full({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  // Digits of pi.
  EXPECT_EQ(philox_full({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, TwoWordCounterFormMatchesTheFullAlgorithm) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i) {
    uint64_t seed = rng(), counter = rng();
    auto expected =
        philox_full({uint32_t(counter), uint32_t(counter >> 32), 0, 0}, {uint32_t(seed), uint32_t(seed >> 32)});
    ASSERT_EQ(as_array(philox::philox4x32(seed, counter)), expected) << seed << " " << counter;
  }
}

TEST(Philox, ElementIndexingConvention) {
  // Element i at offset off uses counter off + i / 4, lane i % 4; so moving the
  // offset by one counter is the same as skipping four elements.
  const uint64_t seed = 0x1234abcd5678ull;
  for (uint64_t i = 0; i < 64; ++i) {
    auto r = philox::philox4x32(seed, 10 + i / 4);
    EXPECT_EQ(philox::uniform_at(seed, 10, i), philox::to_uniform(philox::lane(r, int(i % 4))));
    EXPECT_EQ(philox::uniform_at(seed, 11, i), philox::uniform_at(seed, 10, i + 4));
    EXPECT_EQ(philox::normal_at(seed, 11, i), philox::normal_at(seed, 10, i + 4));
  }
  EXPECT_NE(philox::uniform_at(1, 0, 0), philox::uniform_at(2, 0, 0));
  EXPECT_EQ(philox::counters_for(0), 0u);
  EXPECT_EQ(philox::counters_for(1), 1u);
  EXPECT_EQ(philox::counters_for(4), 1u);
  EXPECT_EQ(philox::counters_for(5), 2u);
}

TEST(Philox, UniformIsInHalfOpenUnitInterval) {
  EXPECT_EQ(philox::to_uniform(0u), 0.0f);
  EXPECT_LT(philox::to_uniform(0xffffffffu), 1.0f);
  EXPECT_EQ(philox::to_uniform(0xffffffffu), 1.0f - std::ldexp(1.0f, -24));
  const int n = 100000;
  double sum = 0, sum_sq = 0;
  float lo = 1, hi = 0;
  for (int i = 0; i < n; ++i) {
    float u = philox::uniform_at(42, 7, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
    sum_sq += double(u) * u;
  }
  double mean = sum / n, var = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 0.005);  // ~5 standard errors
  EXPECT_NEAR(var, 1.0 / 12, 0.002);
  EXPECT_LT(lo, 0.001f);
  EXPECT_GT(hi, 0.999f);
}

TEST(Philox, NormalHasMeanZeroAndVarianceOne) {
  const int n = 100000;
  double sum = 0, sum_sq = 0;
  int within_one = 0;
  for (int i = 0; i < n; ++i) {
    float z = philox::normal_at(2024, 0, i);
    ASSERT_TRUE(std::isfinite(z)) << i;
    sum += z;
    sum_sq += double(z) * z;
    within_one += std::fabs(z) < 1.0f;
  }
  double mean = sum / n, var = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);  // standard error 0.003
  EXPECT_NEAR(var, 1.0, 0.03);  // standard error 0.0045
  EXPECT_NEAR(double(within_one) / n, 0.6827, 0.01);
}

}  // namespace
}  // namespace anvil
