// The tensor-core building blocks (kernels/cuda/device/tensor_core.cuh):
// mma.sync m16n8k16 against a CPU product of the same bfloat16 / float16
// inputs, and ldmatrix (.x4, .x2, plain and .trans) against the fragment
// layout the header documents. On a real GPU (sm_80+) this holds the
// documented layouts to the hardware; on the emulated GPU it checks the
// emulator's warp collectives (emulator/tensor_cores.cpp) against the same
// documentation, so the two cannot drift apart unnoticed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/base/half.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda_info.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/tensor_core_kernels.h"

namespace anvil::cuda {
namespace {

#define SKIP_BEFORE_SM80() \
  do { \
    ANVIL_SKIP_WITHOUT_GPU(); \
    if (device_properties(0).major < 8) GTEST_SKIP() << "mma.m16n8k16 and ldmatrix need sm_80+"; \
  } while (0)

template <typename T> T* device_copy(const std::vector<T>& host) {
  void* p = nullptr;
  ANVIL_CUDA_CHECK(cudaMalloc(&p, host.size() * sizeof(T)));
  ANVIL_CUDA_CHECK(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return static_cast<T*>(p);
}

template <typename T> std::vector<T> host_copy(const T* device, size_t n) {
  std::vector<T> host(n);
  ANVIL_CUDA_CHECK(cudaMemcpy(host.data(), device, n * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

float to_float(uint16_t bits, bool bf16) {
  return bf16 ? bits_float(static_cast<uint32_t>(bits) << 16) : Half::to_float(bits);
}

// D = A B + C for random A (16 x 16), B (16 x 8) in the 16-bit type and C in
// float, against the exact sum in double. The products are exact in float;
// a float sum of 17 terms is within 17 eps of the sum of their magnitudes,
// whatever order or internal rounding a tensor core uses. A layout mistake
// (an element in the wrong place) is off by O(1).
void check_mma(bool bf16, uint64_t seed) {
  std::mt19937 gen(static_cast<uint32_t>(seed));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> a(16 * 16), b(16 * 8);
  std::vector<float> c(16 * 8);
  for (uint16_t& v : a) v = bf16 ? BFloat16(normal(gen)).bits : Half(normal(gen)).bits;
  for (uint16_t& v : b) v = bf16 ? BFloat16(normal(gen)).bits : Half(normal(gen)).bits;
  for (float& v : c) v = normal(gen);
  uint16_t *da = device_copy(a), *db = device_copy(b);
  float *dc = device_copy(c), *dd = device_copy(std::vector<float>(16 * 8, 0.0f));
  test::launch_mma_tile(bf16, da, db, dc, dd, nullptr);
  const std::vector<float> d = host_copy(dd, 16 * 8);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j) {
      double exact = c[size_t(i * 8 + j)], magnitude = std::fabs(exact);
      for (int k = 0; k < 16; ++k) {
        const double p = double(to_float(a[size_t(i * 16 + k)], bf16)) * to_float(b[size_t(k * 8 + j)], bf16);
        exact += p;
        magnitude += std::fabs(p);
      }
      EXPECT_NEAR(d[size_t(i * 8 + j)], exact, 17 * 1.2e-7 * magnitude)
          << (bf16 ? "bfloat16" : "float16") << " D[" << i << "][" << j << "]";
    }
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(dd);
}

TEST(CudaTensorCore, MmaBFloat16MatchesCpuProduct) {
  SKIP_BEFORE_SM80();
  for (uint64_t seed : {1, 2, 3}) check_mma(true, seed);
}

TEST(CudaTensorCore, MmaFloat16MatchesCpuProduct) {
  SKIP_BEFORE_SM80();
  for (uint64_t seed : {4, 5, 6}) check_mma(false, seed);
}

// Every 16-bit value in the 32 shared rows is distinct (row * 8 + column +
// 0x100), and lanes supply rows in a scrambled order, so a register holding
// the wrong element, or a matrix built from the wrong lane's address, shows.
void check_ldmatrix(int matrices, bool trans) {
  std::vector<uint16_t> rows(32 * 8);
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 8; ++c) rows[size_t(r * 8 + c)] = static_cast<uint16_t>(0x100 + r * 8 + c);
  std::vector<int> row_of_lane(32);
  for (int l = 0; l < 32; ++l)
    row_of_lane[size_t(l)] = l < 8 * matrices ? (l * 7 + 3) % 32 : 0;  // lanes past 8 * matrices: ignored
  uint16_t* drows = device_copy(rows);
  int* dlanes = device_copy(row_of_lane);
  uint32_t* dout = device_copy(std::vector<uint32_t>(size_t(32 * matrices), 0));
  test::launch_ldmatrix(matrices, trans, drows, dlanes, dout, nullptr);
  const std::vector<uint32_t> out = host_copy(dout, size_t(32 * matrices));
  // Matrix i's row j is the row lane 8i + j pointed at.
  auto element = [&](int i, int j, int col) { return rows[size_t(row_of_lane[size_t(8 * i + j)] * 8 + col)]; };
  for (int l = 0; l < 32; ++l) {
    const int g = l / 4, q = l % 4;
    for (int i = 0; i < matrices; ++i) {
      uint16_t want[2];
      for (int e = 0; e < 2; ++e) want[e] = trans ? element(i, 2 * q + e, g) : element(i, g, 2 * q + e);
      const uint32_t got = out[size_t(l * matrices + i)];
      EXPECT_EQ(got & 0xffffu, want[0]) << "x" << matrices << (trans ? ".trans" : "") << " lane " << l << " r[" << i
                                        << "] low half";
      EXPECT_EQ(got >> 16, want[1]) << "x" << matrices << (trans ? ".trans" : "") << " lane " << l << " r[" << i
                                    << "] high half";
    }
  }
  cudaFree(drows);
  cudaFree(dlanes);
  cudaFree(dout);
}

TEST(CudaTensorCore, LdmatrixX4MatchesDocumentedLayout) {
  SKIP_BEFORE_SM80();
  check_ldmatrix(4, false);
}

TEST(CudaTensorCore, LdmatrixX4TransMatchesDocumentedLayout) {
  SKIP_BEFORE_SM80();
  check_ldmatrix(4, true);
}

TEST(CudaTensorCore, LdmatrixX2MatchesDocumentedLayoutAndIgnoresOtherLanes) {
  SKIP_BEFORE_SM80();
  check_ldmatrix(2, false);
  check_ldmatrix(2, true);
}

}  // namespace
}  // namespace anvil::cuda
