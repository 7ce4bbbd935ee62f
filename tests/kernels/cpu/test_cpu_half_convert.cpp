// The vector float32 <-> float16/bfloat16 conversions (kernels/cpu/
// vector_convert.h) against the scalar ones of core/base/half.h, bit for bit:
// every 16-bit pattern to float and back, float32 bit patterns around every
// rounding boundary, random bits; on every instruction set the CPU has, in
// chunks of odd lengths (every vector tail, unaligned starts). Then the
// backend's copy (what .to(dtype) runs) on contiguous and strided views.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/vector_convert.h"
#include "kernels/cpu/vector_math.h"
#include "tests/kernels/cpu/nn_kernel_test_util.h"

namespace anvil::test {
namespace {

namespace vec = cpu::vec;

uint16_t bits16(Half h) { return h.bits; }
uint16_t bits16(BFloat16 b) { return b.bits; }
uint32_t bits32(float f) { return float_bits(f); }

// Chunk lengths: 1 to past two AVX-512 vectors, odd and even, so that every
// tail length of every width runs and chunks start at every alignment.
const std::vector<int64_t> kChunks = {1, 2, 3, 5, 7, 8, 9, 13, 15, 16, 17, 23, 31, 32, 33, 47, 63, 65, 127, 1001};

// vec::convert over `in` in consecutive chunks of the lengths above, with
// plain or streaming stores (the chunks start at every alignment).
template <typename To, typename From> std::vector<To> convert_in_chunks(const std::vector<From>& in, bool stream) {
  std::vector<To> out(in.size());
  const auto n = static_cast<int64_t>(in.size());
  for (int64_t i = 0, c = 0; i < n; ++c) {
    const int64_t len = std::min(kChunks[static_cast<size_t>(c) % kChunks.size()], n - i);
    vec::convert(out.data() + i, in.data() + i, len, stream);
    i += len;
  }
  return out;
}

template <typename T> std::vector<T> all_16_bit_patterns() {
  std::vector<T> v(65536);
  for (uint32_t b = 0; b < 65536; ++b) v[b].bits = static_cast<uint16_t>(b);
  return v;
}

// Float bit patterns where rounding to float16 or bfloat16 is decided: every
// top half (all exponents, both signs) with low halves at and around the
// bfloat16 tie (0x8000) and the float16 ties of normal halves (low 13 bits
// 0x1000); the exact midpoints between float16 subnormals ((2m+1) 2^-25);
// then random bits.
std::vector<float> float_edges() {
  const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x2000, 0x3000, 0x5000, 0x7000,
                           0x7fff, 0x8000, 0x8001, 0x9000, 0xb000, 0xd000, 0xf000, 0xffff};
  std::vector<float> v;
  for (uint32_t top = 0; top < 65536; ++top)
    for (uint32_t low : lows) v.push_back(bits_float(top << 16 | low));
  for (int m = 0; m < 2048; ++m) {
    const float mid = static_cast<float>(2 * m + 1) * 0x1p-25f;
    v.push_back(mid);
    v.push_back(-mid);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < (1 << 20); ++i) v.push_back(bits_float(static_cast<uint32_t>(rng())));
  return v;
}

template <typename T>
void expect_16_bits(const std::vector<T>& got, const std::vector<float>& in, const std::string& what) {
  int reported = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t want = T::from_float(in[i]);
    if (bits16(got[i]) != want && reported++ < 5)
      ADD_FAILURE() << what << ": float bits 0x" << std::hex << bits32(in[i]) << " gives 0x" << bits16(got[i])
                    << ", the scalar conversion 0x" << want;
  }
}

template <typename T>
void expect_float_bits(const std::vector<float>& got, const std::vector<T>& in, const std::string& what) {
  int reported = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const uint32_t want = bits32(static_cast<float>(in[i]));
    if (bits32(got[i]) != want && reported++ < 5)
      ADD_FAILURE() << what << ": 16-bit 0x" << std::hex << bits16(in[i]) << " gives 0x" << bits32(got[i])
                    << ", the scalar conversion 0x" << want;
  }
}

template <typename T> void check_round_trips(const char* name) {
  const std::vector<T> all = all_16_bit_patterns<T>();
  const std::vector<float> edges = float_edges();
  std::string targets;
  vec::for_each_target([&](const char* target) {
    targets += std::string(targets.empty() ? "" : ", ") + target;
    for (bool stream : {false, true}) {
      const std::string what = std::string(name) + " on " + target + (stream ? ", streamed" : "");
      const std::vector<float> up = convert_in_chunks<float>(all, stream);
      expect_float_bits(up, all, what + ", every pattern to float");
      expect_16_bits(convert_in_chunks<T>(up, stream), up, what + ", back");
      expect_16_bits(convert_in_chunks<T>(edges, stream), edges, what + ", float edges and random bits");
    }
  });
  ASSERT_FALSE(targets.empty());
  testing::Test::RecordProperty("targets", targets);
  std::printf("%s checked on: %s\n", name, targets.c_str());
}

TEST(CpuHalfConvert, Float16MatchesScalarBitForBit) { check_round_trips<Half>("float16"); }
TEST(CpuHalfConvert, BFloat16MatchesScalarBitForBit) { check_round_trips<BFloat16>("bfloat16"); }

TEST(CpuHalfConvert, NamedEdgeValues) {
  // The rules themselves, not only agreement with the scalar code.
  const float in[] = {65504.0f, 65519.0f, 65520.0f,   1.0f + 0x1p-11f,         1.0f + 3 * 0x1p-11f,
                      0x1p-25f, 0x1p-24f, 0x1.8p-24f, bits_float(0x7f800001u), bits_float(0xffc12345u)};
  const uint16_t want[] = {0x7bff, 0x7bff, 0x7c00, 0x3c00, 0x3c02, 0x0000, 0x0001, 0x0002, 0x7e00, 0xfe00};
  std::vector<Half> out(std::size(in));
  vec::convert(out.data(), in, static_cast<int64_t>(out.size()));
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].bits, want[i]) << "element " << i;

  const float bin[] = {bits_float(0x3f808000u), bits_float(0x3f818000u), bits_float(0x7f7fffffu),
                       bits_float(0x7f800001u)};
  const uint16_t bwant[] = {0x3f80, 0x3f82, 0x7f80, 0x7fc0};
  std::vector<BFloat16> bout(std::size(bin));
  vec::convert(bout.data(), bin, static_cast<int64_t>(bout.size()));
  for (size_t i = 0; i < bout.size(); ++i) EXPECT_EQ(bout[i].bits, bwant[i]) << "element " << i;
}

// The backend's copy between float32 and a 16-bit type, contiguous (split
// over threads) and transposed (the scalar path), against the scalar conversion.
template <typename T> void check_backend_copy() {
  const int64_t rows = 517, cols = 1031;  // odd, and > kParallelGrain elements
  std::vector<float> src = float_edges();
  src.resize(static_cast<size_t>(rows * cols));
  const DType dt = dtype_of<T>::value;
  const View fsrc{src.data(), kFloat32, {rows, cols}, {cols, 1}};
  std::vector<T> half(src.size());
  cpu().copy(View{half.data(), dt, {rows, cols}, {cols, 1}}, fsrc);
  expect_16_bits(half, src, "copy float32 -> 16-bit");
  std::vector<float> back(src.size());
  cpu().copy(View{back.data(), kFloat32, {rows, cols}, {cols, 1}}, View{half.data(), dt, {rows, cols}, {cols, 1}});
  expect_float_bits(back, half, "copy 16-bit -> float32");

  // Transposed source: dst[j][i] = src[i][j].
  std::vector<T> half_t(src.size());
  cpu().copy(View{half_t.data(), dt, {cols, rows}, {rows, 1}}, View{src.data(), kFloat32, {cols, rows}, {1, cols}});
  std::vector<float> src_t(src.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      src_t[static_cast<size_t>(j * rows + i)] = src[static_cast<size_t>(i * cols + j)];
  expect_16_bits(half_t, src_t, "transposed copy float32 -> 16-bit");
}

// Without the vector kernels (no Highway, or ANVIL_CPU_VECTOR=off) there is
// nothing to compare: the copy is the scalar conversion it is checked against.
constexpr const char* kNoVectorKernels = "vector kernels off: the copy is the scalar conversion it is checked against";

TEST(CpuHalfConvert, BackendCopyFloat16) {
  if (!anvil::cpu::vec::enabled()) GTEST_SKIP() << kNoVectorKernels;
  check_backend_copy<Half>();
}
TEST(CpuHalfConvert, BackendCopyBFloat16) {
  if (!anvil::cpu::vec::enabled()) GTEST_SKIP() << kNoVectorKernels;
  check_backend_copy<BFloat16>();
}

}  // namespace
}  // namespace anvil::test
