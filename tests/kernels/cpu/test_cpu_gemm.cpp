// cpu::gemm (kernels/cpu/gemm.h): which library and kernel it picked, and its
// products against a naive loop. The selection check is what keeps anvil off
// generic SSE kernels on a CPU with AVX2 or AVX-512 (a check of the choice,
// not a timing). tests/CMakeLists.txt also runs this file with OpenBLAS told
// to use its Prescott core (as it does on a CPU model it does not know),
// float32 forced onto OpenBLAS and conv onto im2col: the guard must still
// pick a wide core, and the fallbacks must give the same products.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu_info.h"

namespace anvil::test {
namespace {

// The ISA a GEMM kernel must reach on this CPU: the CPU's best, up to
// AVX-512 (no library has wider kernels for float GEMM).
int required_rank() { return std::min(cpu::isa_rank(cpu::cpu_isa()), cpu::isa_rank("avx512_core")); }

void expect_wide_enough(const GemmKernel& k, const char* which) {
  ASSERT_GE(cpu::isa_rank(k.isa), 0) << which << " GEMM: unknown ISA '" << k.isa << "' of " << k.library << " "
                                     << k.kernel;
  EXPECT_GE(cpu::isa_rank(k.isa), required_rank())
      << which << " GEMM runs " << k.library << "'s " << k.kernel << " kernels (" << k.isa << ") on a CPU that offers "
      << cpu::cpu_isa() << ": " << to_string(cpu_capability());
}

TEST(CpuGemm, Float32KernelUsesTheWidestIsaTheCpuOffers) { expect_wide_enough(cpu::float32_gemm_kernel(), "float32"); }

TEST(CpuGemm, Float64KernelUsesTheWidestIsaTheCpuOffers) { expect_wide_enough(cpu::float64_gemm_kernel(), "float64"); }

TEST(CpuGemm, IsaNamesAreOrdered) {
  EXPECT_LT(cpu::isa_rank("sse3"), cpu::isa_rank("sse4.1"));
  EXPECT_LT(cpu::isa_rank("sse4.1"), cpu::isa_rank("avx"));
  EXPECT_LT(cpu::isa_rank("avx"), cpu::isa_rank("avx2"));
  EXPECT_EQ(cpu::isa_rank("avx2_vnni"), cpu::isa_rank("avx2"));
  EXPECT_LT(cpu::isa_rank("avx2"), cpu::isa_rank("avx512_core"));
  EXPECT_EQ(cpu::isa_rank("avx512_core_amx"), cpu::isa_rank("avx512_core"));
  EXPECT_EQ(cpu::isa_rank("neon"), -1);
}

TEST(CpuCapability, NamesTheCpuItsIsaAndEveryLibrary) {
  const CpuCapability c = cpu_capability();
  EXPECT_FALSE(c.cpu_model.empty());
  EXPECT_EQ(c.isa, cpu::cpu_isa());
  EXPECT_FALSE(c.float32_gemm.library.empty());
  EXPECT_FALSE(c.float64_gemm.kernel.empty());
  EXPECT_FALSE(c.conv2d.empty());
  const std::string line = to_string(c);
  for (const std::string& part : {c.cpu_model, c.isa, c.float32_gemm.library, c.float64_gemm.library, c.conv2d})
    EXPECT_NE(line.find(part), std::string::npos) << "'" << part << "' missing from: " << line;
}

// C = alpha * op(A) @ op(B) + beta * C with padded leading dimensions, in
// every transpose combination, against a double-precision loop.
template <typename T> void check_against_naive(double tol) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  const int64_t m = 37, n = 29, k = 53, pad = 3;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
      const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
      std::vector<T> a(a_rows * lda), b(b_rows * ldb), c(m * ldc);
      for (T& v : a) v = static_cast<T>(normal(rng));
      for (T& v : b) v = static_cast<T>(normal(rng));
      for (T& v : c) v = static_cast<T>(normal(rng));
      const std::vector<T> c_before = c;
      const T alpha = T(0.75), beta = T(-0.5);
      cpu::gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < k; ++p) {
            const double av = ta ? a[p * lda + i] : a[i * lda + p];
            const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
            sum += av * bv;
          }
          const double expected = double(alpha) * sum + double(beta) * c_before[i * ldc + j];
          ASSERT_NEAR(c[i * ldc + j], expected, tol * (1 + std::abs(expected)))
              << "trans_a " << ta << " trans_b " << tb << " at (" << i << ", " << j << ")";
        }
        // The padding past column n is not the product's to write.
        for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], c_before[i * ldc + j]);
      }
    }
  }
}

TEST(CpuGemm, Float32MatchesNaiveProductInEveryTransposeWithPaddedRows) { check_against_naive<float>(1e-4); }

TEST(CpuGemm, Float64MatchesNaiveProductInEveryTransposeWithPaddedRows) { check_against_naive<double>(1e-12); }

}  // namespace
}  // namespace anvil::test
