// The GEMM ladder's float32 rungs 01-07 on the emulated GPU, against a
// double-precision reference computed here (test_gemm_ladder.cpp checks them
// against cuBLAS on a real GPU; cuBLAS is absent on the emulated one), and
// anvil's matmul, which runs on the ladder there, against the CPU backend.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/ops.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/emulator/emulator.h"
#include "kernels/cuda/gemm/gemm.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using cuda::gemm::GemmArgs;
using cuda::gemm::GemmRung;

struct Shape3 {
  int64_t M, N, K;
};

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

float* upload(const std::vector<float>& v) {
  void* p = nullptr;
  ANVIL_CUDA_CHECK(cudaMalloc(&p, v.size() * sizeof(float)));
  ANVIL_CUDA_CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  return static_cast<float*>(p);
}

class GemmRungOnEmulator : public ::testing::TestWithParam<int> {};

TEST_P(GemmRungOnEmulator, MatchesDoubleReference) {
  const GemmRung rung = static_cast<GemmRung>(GetParam());
  // Sizes that are not multiples of any tile (tails everywhere), leading
  // dimensions padded past the width (multiples of 4 for the vector rungs).
  for (const Shape3 s : {Shape3{67, 72, 37}, Shape3{130, 36, 68}}) {
    GemmArgs g;
    g.M = s.M, g.N = s.N, g.K = s.K;
    g.lda = (s.K + 3) / 4 * 4 + 4, g.ldb = (s.N + 3) / 4 * 4 + 4, g.ldc = (s.N + 3) / 4 * 4 + 8;
    g.alpha = 1.25f, g.beta = -0.5f;
    const std::vector<float> a = random_floats(size_t(g.M * g.lda), 1), b = random_floats(size_t(g.K * g.ldb), 2),
                             c = random_floats(size_t(g.M * g.ldc), 3);
    float *da = upload(a), *db = upload(b), *dc = upload(c);
    g.A = da, g.B = db, g.C = dc;
    const std::string why = cuda::gemm::gemm_unsupported_reason(rung, g);
    ASSERT_TRUE(why.empty()) << cuda::gemm::rung_name(rung) << ": " << why;
    cuda::gemm::launch_gemm(rung, g, nullptr);
    std::vector<float> got(c.size());
    ASSERT_EQ(cudaMemcpy(got.data(), dc, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_TRUE(emulator::take_findings().empty());
    int64_t bad = 0;
    for (int64_t i = 0; i < g.M; ++i)
      for (int64_t j = 0; j < g.ldc; ++j) {
        const double before = c[size_t(i * g.ldc + j)], now = got[size_t(i * g.ldc + j)];
        if (j >= g.N) {  // padding past N must be left alone
          bad += now != before;
          continue;
        }
        double dot = 0;
        for (int64_t k = 0; k < g.K; ++k) dot += double(a[size_t(i * g.lda + k)]) * b[size_t(k * g.ldb + j)];
        const double want = g.alpha * dot + g.beta * before;
        bad += std::abs(now - want) > 1e-4 * (1 + std::abs(want));
      }
    EXPECT_EQ(bad, 0) << cuda::gemm::rung_name(rung) << " " << s.M << "x" << s.N << "x" << s.K;
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
  }
}

INSTANTIATE_TEST_SUITE_P(Rungs01To07, GemmRungOnEmulator, ::testing::Range(1, 8),
                         [](const auto& info) { return std::string(cuda::gemm::rung_name(GemmRung(info.param))); });

TEST(EmulatorMatmul, MatchesCpuForEveryLadderDtypeAndLayout) {
  for (DType dt : {kFloat32, kBFloat16, kFloat16}) {
    const Tensor a = test::random_tensor({3, 21, 34}, dt, 1), b = test::random_tensor({3, 34, 19}, dt, 2);
    // 16-bit inputs are widened to float32 on the ladder; the CPU also sums in float32 or better.
    const test::Tolerance tol = dt == kFloat32 ? test::Tolerance{1e-4, 1e-4} : test::tolerance_for(dt);
    EXPECT_TRUE(test::all_close(matmul(a.cuda(), b.cuda()), matmul(a, b), tol)) << dt;
    const Tensor bt = test::random_tensor({3, 19, 34}, dt, 3).transpose(1, 2);  // strided operand
    EXPECT_TRUE(test::all_close(matmul(a.cuda(), bt.cuda()), matmul(a, bt), tol)) << dt;
  }
}

TEST(EmulatorMatmul, Float64RunsOnSharedTilesWithTails) {
  // Sizes that are not multiples of the 16x16 tile, a batch, a strided operand.
  const Tensor a = test::random_tensor({2, 37, 18}, kFloat64, 4), b = test::random_tensor({2, 18, 33}, kFloat64, 5);
  EXPECT_TRUE(test::all_close(matmul(a.cuda(), b.cuda()), matmul(a, b), {1e-12, 1e-12}));
  const Tensor bt = test::random_tensor({2, 33, 18}, kFloat64, 6).transpose(1, 2);
  EXPECT_TRUE(test::all_close(matmul(a.cuda(), bt.cuda()), matmul(a, bt), {1e-12, 1e-12}));
  EXPECT_TRUE(emulator::take_findings().empty());
}

TEST(EmulatorMatmul, IntegerDtypesAreRefusedNamingTheOp) {
  const Tensor i = full({4, 4}, 2.0, TensorOptions(kInt32));
  try {
    (void)matmul(i.cuda(), i.cuda());
    FAIL() << "an int32 matmul ran on the emulated GPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace anvil
