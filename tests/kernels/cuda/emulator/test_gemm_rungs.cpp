// The GEMM ladder on the emulated GPU: the float32 rungs 01-07 and the
// tensor-core rung 08 (bfloat16, float16: mma.sync, ldmatrix and cp.async as
// the emulator's collectives) against the exact product computed here in
// double (test_gemm_ladder.cpp checks every rung against it and beside cuBLAS
// on a real GPU; cuBLAS is absent on the emulated one), and anvil's matmul,
// which runs on the ladder there, against the CPU backend. Rung 09 (wgmma,
// TMA) runs on a real sm_90 GPU only.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/base/half.h"
#include "core/ops.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/emulator/emulator.h"
#include "kernels/cuda/gemm/gemm.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/gemm_tolerance.h"

namespace anvil {
namespace cuda::gemm {
void PrintTo(GemmDType t, std::ostream* os) { *os << dtype_name(t); }  // gtest's names for the parameters
}  // namespace cuda::gemm
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

INSTANTIATE_TEST_SUITE_P(Rungs01To07, GemmRungOnEmulator, ::testing::Range(1, 8), [](const auto& case_info) {
  return std::string(cuda::gemm::rung_name(GemmRung(case_info.param)));
});

// --- rung 08: tensor cores ---

using cuda::gemm::GemmDType;

struct TensorCoreCase {
  Shape3 s;
  float alpha, beta;
  int64_t pad = 0;  // extra elements per row of every matrix (a multiple of 8 keeps alignment)
};

uint16_t to_bits(float v, GemmDType t) { return t == GemmDType::BFloat16 ? BFloat16(v).bits : Half(v).bits; }
double from_bits(uint16_t b, GemmDType t) {
  return t == GemmDType::BFloat16 ? bits_float(uint32_t{b} << 16) : Half::to_float(b);
}
int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// One launch of rung 08 on random N(0, 1) inputs rounded to `t`; every
// element of C judged against the exact product of the rounded inputs with
// test_gemm_ladder.cpp's tolerance; C's padding must stay as it was (NaN
// where beta == 0, which must not be read either).
void run_tensor_core_case(const TensorCoreCase& c, GemmDType t, uint64_t seed) {
  const int64_t M = c.s.M, N = c.s.N, K = c.s.K;
  GemmArgs g;
  g.dtype = t;
  g.M = M, g.N = N, g.K = K;
  g.lda = round_up(K > 0 ? K : 1, 8) + c.pad, g.ldb = round_up(N, 8) + c.pad, g.ldc = N + c.pad;
  g.alpha = c.alpha, g.beta = c.beta;
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> a(size_t(M * g.lda)), b(size_t(K * g.ldb)), cin(size_t(M * g.ldc));
  for (uint16_t& v : a) v = to_bits(normal(gen), t);
  for (uint16_t& v : b) v = to_bits(normal(gen), t);
  for (uint16_t& v : cin) v = c.beta == 0.0f ? to_bits(std::nanf(""), t) : to_bits(normal(gen), t);
  void *da = nullptr, *db = nullptr, *dc = nullptr;
  ANVIL_CUDA_CHECK(cudaMalloc(&da, std::max<size_t>(a.size(), 8) * 2));
  ANVIL_CUDA_CHECK(cudaMalloc(&db, std::max<size_t>(b.size(), 8) * 2));
  ANVIL_CUDA_CHECK(cudaMalloc(&dc, cin.size() * 2));
  ANVIL_CUDA_CHECK(cudaMemcpy(da, a.data(), a.size() * 2, cudaMemcpyHostToDevice));
  ANVIL_CUDA_CHECK(cudaMemcpy(db, b.data(), b.size() * 2, cudaMemcpyHostToDevice));
  ANVIL_CUDA_CHECK(cudaMemcpy(dc, cin.data(), cin.size() * 2, cudaMemcpyHostToDevice));
  g.A = da, g.B = db, g.C = dc;
  const std::string why = cuda::gemm::gemm_unsupported_reason(GemmRung::TensorCoreMma, g);
  ASSERT_TRUE(why.empty()) << why;
  cuda::gemm::launch_gemm(GemmRung::TensorCoreMma, g, nullptr);
  std::vector<uint16_t> got(cin.size());
  ASSERT_EQ(cudaMemcpy(got.data(), dc, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  const std::vector<emulator::Finding> found = emulator::take_findings();
  EXPECT_TRUE(found.empty()) << found.size() << " finding(s), first: " << found[0].text;
  const cuda::gemm::Tol tol = cuda::gemm::tolerance(t, K);
  int64_t bad = 0, untouched = 0;
  double worst = 0, worst_got = 0, worst_want = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < g.ldc; ++j) {
      const size_t at = size_t(i * g.ldc + j);
      if (j >= N) {  // padding past N: left alone, bit for bit
        untouched += got[at] != cin[at];
        continue;
      }
      double dot = 0;
      for (int64_t k = 0; k < K; ++k)
        dot += from_bits(a[size_t(i * g.lda + k)], t) * from_bits(b[size_t(k * g.ldb + j)], t);
      const double want = double(c.alpha) * dot + (c.beta == 0.0f ? 0.0 : double(c.beta) * from_bits(cin[at], t));
      const double now = from_bits(got[at], t), err = std::fabs(now - want);
      if (!(err <= tol.atol + tol.rtol * std::fabs(want))) {  // NaN is never within
        ++bad;
        if (!(err <= worst)) worst = err, worst_got = now, worst_want = want;
      }
    }
  EXPECT_EQ(bad, 0) << "08_tensor_core_mma " << cuda::gemm::dtype_name(t) << " M=" << M << " N=" << N << " K=" << K
                    << " alpha=" << c.alpha << " beta=" << c.beta << " pad=" << c.pad << ": worst got " << worst_got
                    << ", exact " << worst_want;
  EXPECT_EQ(untouched, 0) << "08_tensor_core_mma wrote C's padding";
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
}

class TensorCoreRungOnEmulator : public ::testing::TestWithParam<GemmDType> {};

// test_gemm_ladder.cpp's shapes and cases but its 1000^3 (minutes here):
// one element, ragged edges everywhere (K % 8 != 0: cp.async's partial
// zero-filled chunks), exactly one block tile, K = 8 (half a k-step), a
// one-row grid with many k-tiles, a 3 x 2 grid with ten, padded leading
// dimensions, K = 0.
TEST_P(TensorCoreRungOnEmulator, MatchesExactProduct) {
  const GemmDType t = GetParam();
  uint64_t seed = t == GemmDType::BFloat16 ? 100 : 200;
  for (const Shape3 s : {Shape3{1, 1, 1}, Shape3{17, 33, 65}, Shape3{128, 128, 128}, Shape3{64, 200, 8},
                         Shape3{130, 257, 31}, Shape3{3, 300, 1000}, Shape3{260, 200, 300}}) {
    run_tensor_core_case({s, 1.0f, 0.0f}, t, seed++);
    run_tensor_core_case({s, 1.5f, -0.5f}, t, seed++);
  }
  run_tensor_core_case({{45, 70, 129}, 0.75f, 2.0f, /*pad=*/8}, t, seed++);
  run_tensor_core_case({{19, 23, 0}, 1.0f, 0.5f}, t, seed++);
}

INSTANTIATE_TEST_SUITE_P(Rung08, TensorCoreRungOnEmulator, ::testing::Values(GemmDType::BFloat16, GemmDType::Float16),
                         [](const auto& case_info) { return std::string(cuda::gemm::dtype_name(case_info.param)); });

// Rung 09 is wgmma and TMA, which the emulator does not implement: refused
// with the reason, never picked by best_rung, and judged on a real GPU only.
TEST(GemmRung09OnEmulator, HopperWgmmaIsRealGpuOnly) {
  EXPECT_FALSE(cuda::gemm::detail::hopper_wgmma_built());
  alignas(16) static uint16_t dummy[64];
  GemmArgs g;
  g.dtype = GemmDType::BFloat16;
  g.M = g.N = g.K = 8, g.lda = g.ldb = g.ldc = 8, g.A = g.B = g.C = dummy;
  const std::string why = cuda::gemm::gemm_unsupported_reason(GemmRung::HopperWgmma, g);
  EXPECT_NE(why.find("emulated GPU"), std::string::npos) << why;
  EXPECT_EQ(cuda::gemm::best_rung(g), GemmRung::TensorCoreMma);
  GTEST_SKIP() << "09_hopper_wgmma (wgmma, TMA) runs on a real sm_90 GPU only: test_gemm_ladder.cpp judges it there";
}

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
