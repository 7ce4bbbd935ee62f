// Every rung of the hand-written GEMM ladder (kernels/cuda/gemm/) against
// the exact product (and beside cuBLAS) on random inputs, for shapes that are and are not multiples of the
// tiles, with alpha/beta, padded leading dimensions, and beta = 0 on a C full
// of NaN (which must not be read). cuBLAS is called directly here so the
// reference does not depend on anvil's own matmul path (which may route to
// these very kernels).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/base/half.h"
#include "kernels/cuda/gemm/gemm.h"
#include "kernels/cuda/gemm/ladder_matmul.h"
#include "kernels/cuda_info.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/gemm_tolerance.h"
#include "kernels/ops/linalg_kernels.h"

namespace anvil::cuda::gemm {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call
#define CUBLAS_OK(call) ASSERT_EQ((call), CUBLAS_STATUS_SUCCESS) << #call

struct Shape3 {
  int64_t M, N, K;
};

// 1x1x1 and primes exercise every edge predicate; 128^3 is exactly one tile
// of the big rungs; 1000^3 is many tiles with ragged edges (1000 % 128 != 0).
const std::vector<Shape3> kShapes = {{1, 1, 1},      {17, 33, 65},   {128, 128, 128},   {64, 200, 8},
                                     {130, 257, 31}, {3, 300, 1000}, {1000, 1000, 1000}};

size_t elem_size(GemmDType t) { return t == GemmDType::Float32 ? 4 : 2; }

// Host values are kept as float; the device copy is rounded to the dtype and
// the same rounded values feed both our kernel and cuBLAS.
std::vector<uint8_t> encode(const std::vector<float>& v, GemmDType t) {
  std::vector<uint8_t> out(v.size() * elem_size(t));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == GemmDType::Float32) {
      std::memcpy(&out[i * 4], &v[i], 4);
    } else {
      const uint16_t bits = t == GemmDType::BFloat16 ? BFloat16(v[i]).bits : Half(v[i]).bits;
      std::memcpy(&out[i * 2], &bits, 2);
    }
  }
  return out;
}

std::vector<float> decode(const std::vector<uint8_t>& bytes, GemmDType t) {
  const size_t n = bytes.size() / elem_size(t);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == GemmDType::Float32) {
      std::memcpy(&out[i], &bytes[i * 4], 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, &bytes[i * 2], 2);
      if (t == GemmDType::BFloat16) {
        out[i] = bits_float(static_cast<uint32_t>(bits) << 16);
      } else {
        out[i] = Half::to_float(bits);
      }
    }
  }
  return out;
}

struct DeviceBuffer {
  void* ptr = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    if (cudaMalloc(&ptr, bytes > 0 ? bytes : 16) != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

cudaDataType_t cublas_type(GemmDType t) {
  switch (t) {
    case GemmDType::Float32:
      return CUDA_R_32F;
    case GemmDType::BFloat16:
      return CUDA_R_16BF;
    case GemmDType::Float16:
      return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

struct Case {
  Shape3 s;
  GemmDType dtype;
  float alpha, beta;
  int64_t pad = 0;  // extra elements per row of every matrix (a multiple of 8 keeps alignment)
};

// The multiple of elements lda and ldb must be for the rung's 16-byte loads
// (gemm.h). Shapes that are not multiples of it still get tested: their
// leading dimensions are rounded up, the sizes (and so the edge tiles) are not.
int64_t ld_multiple(GemmRung rung) {
  switch (rung) {
    case GemmRung::Vectorized:
    case GemmRung::WarpTiling:
      return 4;
    case GemmRung::TensorCoreMma:
    case GemmRung::HopperWgmma:
      return 8;
    default:
      return 1;
  }
}
int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

void run_case(GemmRung rung, const Case& c, cublasHandle_t handle, uint64_t seed) {
  const int64_t M = c.s.M, N = c.s.N, K = c.s.K;
  // At least 1: cuBLAS rejects a leading dimension of 0 even when K == 0.
  const int64_t align = ld_multiple(rung);
  const int64_t lda = round_up(K > 0 ? K : 1, align) + c.pad, ldb = round_up(N, align) + c.pad;
  const int64_t ldc = N + c.pad;
  std::mt19937 gen(static_cast<uint32_t>(seed));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(M * lda)), b(static_cast<size_t>(K * ldb)),
      cinit(static_cast<size_t>(M * ldc));
  for (float& v : a) v = normal(gen);
  for (float& v : b) v = normal(gen);
  for (float& v : cinit) v = c.beta == 0.0f ? std::nanf("") : normal(gen);  // beta == 0: never read

  const GemmDType t = c.dtype;
  const auto a_bytes = encode(a, t), b_bytes = encode(b, t), c_bytes = encode(cinit, t);
  DeviceBuffer dA(a_bytes.size()), dB(b_bytes.size()), dC(c_bytes.size()), dRef(c_bytes.size());
  ASSERT_TRUE(dA.ptr && dB.ptr && dC.ptr && dRef.ptr) << "cudaMalloc failed";
  CUDA_OK(cudaMemcpy(dA.ptr, a_bytes.data(), a_bytes.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dB.ptr, b_bytes.data(), b_bytes.size(), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dC.ptr, c_bytes.data(), c_bytes.size(), cudaMemcpyHostToDevice));
  // The reference starts from finite values where beta == 0 (cuBLAS does not
  // read C then either, but a NaN there must not be what makes us agree).
  std::vector<uint8_t> ref_init = c.beta == 0.0f ? std::vector<uint8_t>(c_bytes.size(), 0) : c_bytes;
  CUDA_OK(cudaMemcpy(dRef.ptr, ref_init.data(), ref_init.size(), cudaMemcpyHostToDevice));

  GemmArgs args;
  args.dtype = t;
  args.M = M, args.N = N, args.K = K;
  args.A = dA.ptr, args.lda = lda;
  args.B = dB.ptr, args.ldb = ldb;
  args.C = dC.ptr, args.ldc = ldc;
  args.alpha = c.alpha, args.beta = c.beta;
  ASSERT_NO_THROW(launch_gemm(rung, args, nullptr));
  CUDA_OK(cudaDeviceSynchronize());

  // Row-major C = A B is column-major C^T = B^T A^T: swap the operands.
  CUBLAS_OK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M),
                         static_cast<int>(K), &c.alpha, dB.ptr, cublas_type(t), static_cast<int>(ldb), dA.ptr,
                         cublas_type(t), static_cast<int>(lda), &c.beta, dRef.ptr, cublas_type(t),
                         static_cast<int>(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CUDA_OK(cudaDeviceSynchronize());

  std::vector<uint8_t> got_bytes(c_bytes.size()), ref_bytes(c_bytes.size());
  CUDA_OK(cudaMemcpy(got_bytes.data(), dC.ptr, got_bytes.size(), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(ref_bytes.data(), dRef.ptr, ref_bytes.size(), cudaMemcpyDeviceToHost));
  const auto got = decode(got_bytes, t), ref = decode(ref_bytes, t);

  // The judge is the exact product of the rounded inputs (float64 sums on the
  // host), not cuBLAS: with 16-bit outputs cuBLAS may pick split-K kernels
  // whose partial sums are reduced in the output type (seen on an H100:
  // fp16, M=3, K=1000 came back 0.022 off where our kernel was 0.0002 off).
  // Every element where we and cuBLAS disagree is judged, plus a sample of
  // the rest (all of it for small problems), so the host work stays small.
  const std::vector<float> a_in = decode(a_bytes, t), b_in = decode(b_bytes, t), c_in = decode(c_bytes, t);
  auto exact = [&](int64_t i, int64_t j) {
    double sum = 0;
    for (int64_t k = 0; k < K; ++k)
      sum += static_cast<double>(a_in[static_cast<size_t>(i * lda + k)]) * b_in[static_cast<size_t>(k * ldb + j)];
    const double scaled = static_cast<double>(c.alpha) * sum;
    return c.beta == 0.0f ? scaled : scaled + static_cast<double>(c.beta) * c_in[static_cast<size_t>(i * ldc + j)];
  };
  const Tol tol = tolerance(t, K);
  auto within = [&](double value, double want) {
    return std::fabs(value - want) <= tol.atol + tol.rtol * std::fabs(want);  // NaN is never within
  };
  const int64_t sample_step = std::max<int64_t>(1, M * N * std::max<int64_t>(K, 1) / (int64_t{1} << 22));
  int64_t bad = 0, worst_i = -1, worst_j = -1;
  double worst = -1;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      const double g = got[static_cast<size_t>(i * ldc + j)], r = ref[static_cast<size_t>(i * ldc + j)];
      if (within(g, r) && (i * N + j) % sample_step != 0) continue;
      const double want = exact(i, j);
      if (!within(g, want)) {
        ++bad;
        const double err = std::fabs(g - want);
        if (!(err <= worst)) worst = err, worst_i = i, worst_j = j;
      }
    }
  }
  if (bad > 0) {
    const size_t w = static_cast<size_t>(worst_i * ldc + worst_j);
    ADD_FAILURE() << rung_name(rung) << " " << dtype_name(t) << " M=" << M << " N=" << N << " K=" << K << " lda=" << lda
                  << " ldb=" << ldb << " ldc=" << ldc << " alpha=" << c.alpha << " beta=" << c.beta << ": " << bad
                  << " judged elements are off the exact result; worst at (" << worst_i << ", " << worst_j << "): got "
                  << got[w] << ", exact " << exact(worst_i, worst_j) << ", cuBLAS " << ref[w] << " (tolerance "
                  << tol.atol << " + " << tol.rtol << " * |exact|)";
  }
  // Padding columns of C (j >= N) must be untouched.
  const std::vector<float> before = decode(c_bytes, t);
  for (int64_t i = 0; i < M && c.pad > 0 && c.beta != 0.0f; ++i)
    for (int64_t j = N; j < ldc; ++j)
      ASSERT_EQ(got[static_cast<size_t>(i * ldc + j)], before[static_cast<size_t>(i * ldc + j)])
          << "wrote outside C at (" << i << ", " << j << ")";
}

class GemmLadder : public ::testing::TestWithParam<GemmRung> {};

TEST_P(GemmLadder, MatchesCublas) {
  ANVIL_SKIP_WITHOUT_GPU();
  const GemmRung rung = GetParam();
  if (rung == GemmRung::HopperWgmma) {
    const DeviceProperties props = device_properties(0);
    if (props.major != 9 || props.minor != 0)
      GTEST_SKIP() << "09_hopper_wgmma needs an sm_90 GPU; this one is " << props.name << " (sm_" << props.major
                   << props.minor << ")";
    if (!detail::hopper_wgmma_built())
      GTEST_SKIP() << "09_hopper_wgmma was not built (CMAKE_CUDA_ARCHITECTURES has no 90/90a)";
  }
  if (rung == GemmRung::TensorCoreMma && device_properties(0).major < 8)
    GTEST_SKIP() << "08_tensor_core_mma needs sm_80+";

  cublasHandle_t handle = nullptr;
  CUBLAS_OK(cublasCreate(&handle));
  // No TF32 in the float32 reference: our float32 rungs are true FP32.
  CUBLAS_OK(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH));
  uint64_t seed = 1;
  for (GemmDType t : {GemmDType::Float32, GemmDType::BFloat16, GemmDType::Float16}) {
    if (!rung_supports_dtype(rung, t)) continue;
    for (const Shape3& s : kShapes) {
      run_case(rung, {s, t, 1.0f, 0.0f}, handle, seed++);
      run_case(rung, {s, t, 1.5f, -0.5f}, handle, seed++);
      if (HasFatalFailure()) break;
    }
    run_case(rung, {{45, 70, 129}, t, 0.75f, 2.0f, /*pad=*/8}, handle, seed++);  // padded leading dims
    run_case(rung, {{19, 23, 0}, t, 1.0f, 0.5f}, handle, seed++);  // K = 0: C = beta * C
  }
  cublasDestroy(handle);
}

INSTANTIATE_TEST_SUITE_P(AllRungs, GemmLadder,
                         ::testing::Values(GemmRung::Naive, GemmRung::Coalesced, GemmRung::SharedTiles,
                                           GemmRung::RegisterTile1D, GemmRung::RegisterTile2D, GemmRung::Vectorized,
                                           GemmRung::WarpTiling, GemmRung::TensorCoreMma, GemmRung::HopperWgmma),
                         [](const ::testing::TestParamInfo<GemmRung>& case_info) {
                           return std::string("rung_") + rung_name(case_info.param);
                         });

// Argument checks happen on the host before anything touches the GPU, so
// these run everywhere.
GemmArgs fake_fp32_args() {
  alignas(16) static float dummy[64];
  GemmArgs a;
  a.M = a.N = a.K = 8;
  a.A = a.B = dummy;
  a.C = dummy;
  a.lda = a.ldb = a.ldc = 8;
  return a;
}

TEST(GemmLadderArgs, RejectsWrongDtypeWithItsName) {
  GemmArgs a = fake_fp32_args();
  a.dtype = GemmDType::BFloat16;
  const std::string why = gemm_unsupported_reason(GemmRung::WarpTiling, a);
  EXPECT_NE(why.find("07_warp_tiling does not support bfloat16"), std::string::npos) << why;
  EXPECT_THROW(launch_gemm(GemmRung::Naive, a, nullptr), Error);
}

TEST(GemmLadderArgs, VectorizedRungsNeedLeadingDimensionsMultipleOf4) {
  GemmArgs a = fake_fp32_args();
  a.K = 5, a.lda = 5;
  EXPECT_TRUE(gemm_unsupported_reason(GemmRung::RegisterTile2D, a).empty());  // scalar rungs take anything
  const std::string why = gemm_unsupported_reason(GemmRung::Vectorized, a);
  EXPECT_NE(why.find("multiples of 4"), std::string::npos) << why;
  try {
    launch_gemm(GemmRung::WarpTiling, a, nullptr);
    ADD_FAILURE() << "expected anvil::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lda=5"), std::string::npos) << e.what();
  }
}

TEST(GemmLadderArgs, RejectsMisalignedPointersAndSmallLeadingDimensions) {
  GemmArgs a = fake_fp32_args();
  a.A = static_cast<const float*>(a.A) + 1;  // 4-byte aligned only
  EXPECT_NE(gemm_unsupported_reason(GemmRung::Vectorized, a).find("16-byte aligned"), std::string::npos);
  a = fake_fp32_args();
  a.ldc = 7;
  EXPECT_NE(gemm_unsupported_reason(GemmRung::Naive, a).find("leading dimensions too small"), std::string::npos);
  a = fake_fp32_args();
  a.M = -1;
  EXPECT_FALSE(gemm_unsupported_reason(GemmRung::Naive, a).empty());
}

TEST(GemmLadderArgs, EmptyOutputIsANoOp) {
  GemmArgs a = fake_fp32_args();
  a.M = 0;
  EXPECT_NO_THROW(launch_gemm(GemmRung::Naive, a, nullptr));  // no launch, no GPU needed
}

TEST(GemmLadderArgs, RungNamesMatchFiles) {
  EXPECT_STREQ(rung_name(GemmRung::Naive), "01_naive");
  EXPECT_STREQ(rung_name(GemmRung::HopperWgmma), "09_hopper_wgmma");
}

// ladder_matmul: the kernel::Matmul entry point. Views it cannot take are
// declined (false) before anything is launched, so this runs without a GPU.
TEST(LadderMatmul, DeclinesTransposedViewsAndOtherDtypes) {
  alignas(16) static float buf[64];
  View a{buf, kFloat32, {4, 8}, {8, 1}}, b{buf, kFloat32, {8, 4}, {1, 8}}, out{buf, kFloat32, {4, 4}, {4, 1}};
  EXPECT_FALSE(ladder_matmul(out, a, b, MatmulParams{}, nullptr));  // b is a transposed view
  View ai = a, bi = b, oi = out;
  ai.dtype = bi.dtype = oi.dtype = kInt32;
  bi.strides = {4, 1};
  EXPECT_FALSE(ladder_matmul(oi, ai, bi, MatmulParams{}, nullptr));  // no integer rung
}

// A batched float32 product through ladder_matmul vs cuBLAS per batch.
TEST(LadderMatmul, BatchedFloat32MatchesCublas) {
  ANVIL_SKIP_WITHOUT_GPU();
  const int64_t B = 3, M = 33, K = 40, N = 24;
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(B * M * K), b(B * K * N);
  for (float& v : a) v = normal(gen);
  for (float& v : b) v = normal(gen);
  DeviceBuffer dA(a.size() * 4), dB(b.size() * 4), dC(B * M * N * 4), dRef(B * M * N * 4);
  ASSERT_TRUE(dA.ptr && dB.ptr && dC.ptr && dRef.ptr);
  CUDA_OK(cudaMemcpy(dA.ptr, a.data(), a.size() * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(dB.ptr, b.data(), b.size() * 4, cudaMemcpyHostToDevice));
  View va{dA.ptr, kFloat32, {B, M, K}, {M * K, K, 1}}, vb{dB.ptr, kFloat32, {B, K, N}, {K * N, N, 1}},
      vc{dC.ptr, kFloat32, {B, M, N}, {M * N, N, 1}};
  ASSERT_TRUE(ladder_matmul(vc, va, vb, MatmulParams{}, nullptr));
  cublasHandle_t handle = nullptr;
  CUBLAS_OK(cublasCreate(&handle));
  CUBLAS_OK(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH));
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_OK(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one,
                                      static_cast<const float*>(dB.ptr), N, K * N, static_cast<const float*>(dA.ptr), K,
                                      M * K, &zero, static_cast<float*>(dRef.ptr), N, M * N, B));
  CUDA_OK(cudaDeviceSynchronize());
  cublasDestroy(handle);
  std::vector<float> got(B * M * N), ref(B * M * N);
  CUDA_OK(cudaMemcpy(got.data(), dC.ptr, got.size() * 4, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(ref.data(), dRef.ptr, ref.size() * 4, cudaMemcpyDeviceToHost));
  const Tol tol = tolerance(GemmDType::Float32, K);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - ref[i]), tol.atol + tol.rtol * std::fabs(ref[i])) << "element " << i;
}

}  // namespace
}  // namespace anvil::cuda::gemm
