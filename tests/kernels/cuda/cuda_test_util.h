#pragma once
// Shared helpers for the CUDA, cuBLAS and cuDNN tests (executable
// anvil_tests_cuda):
//
//   ANVIL_SKIP_WITHOUT_GPU();             first line of every test: skips with a
//                                         clear message where no GPU is visible
//   Tensor x = test::random_tensor({4, 5}, kFloat16, seed);   // on the CPU
//   Tensor y = some_op(x.cuda());
//   EXPECT_CUDA_CLOSE(y, some_op(x));     // CUDA result vs CPU reference
//
// The random values come from std::mt19937 (not from anvil's generator), so a
// bug in anvil's random kernels cannot hide a bug elsewhere. all_close
// copies the CUDA tensor to the CPU, upcasts both sides to float64 and
// compares |got - want| <= atol + rtol * |want| elementwise, with tolerances
// chosen per dtype (tolerance_for); NaN must meet NaN and an infinity the same
// infinity. On failure it reports how many elements differ, the worst one
// (index, both values) and the largest absolute error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/ops.h"
#include "core/tensor.h"
#include "kernels/cuda_info.h"

// Skips the current test (from the test body) when no CUDA GPU is visible.
#define ANVIL_SKIP_WITHOUT_GPU() \
  do { \
    if (!::anvil::cuda::is_available()) { \
      GTEST_SKIP() << "no CUDA GPU is visible to this process (built with CUDA, " \
                      "but cudaGetDeviceCount found none): CUDA test skipped"; \
    } \
  } while (0)

namespace anvil::test {

// True in the emulated-GPU build (kernels/cuda/emulator), where kernels run
// on CPU fibers, slowly: tests keep their largest shapes for one variant there.
constexpr bool emulated_gpu() {
#if defined(ANVIL_CUDA_EMULATOR)
  return true;
#else
  return false;
#endif
}

// "[2, 3, 9, 9]" for test traces (gtest's Message does not find anvil's
// operator<< for Shape, a std::vector).
inline std::string shape_text(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

// Defaults for comparing a CUDA kernel with the CPU reference. They allow for
// a different summation order (reductions, matmul, norms) but not for wrong
// rounding: float32 keeps ~1e-5 relative, half types a few units in the last
// place (float16 eps = 9.8e-4, bfloat16 eps = 7.8e-3). Integers and bool must
// match exactly. Pass your own Tolerance where an op has a documented looser
// bound (e.g. tf32 matmul, ~3e-4 relative).
inline Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return {1e-10, 1e-12};
    case DType::Float32:
      return {1e-5, 1e-6};
    case DType::Float16:
      return {2e-3, 1e-3};
    case DType::BFloat16:
      return {1.6e-2, 1e-2};
    default:
      return {0, 0};
  }
}

// A CPU tensor of `shape` and `dtype` with random values: standard normal for
// floating dtypes, uniform integers in [-100, 100] for int32/int64 ([0, 255]
// for uint8), fair coin flips for bool. The same seed gives the same tensor.
inline Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed = 0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + 12345);
  std::vector<double> values(static_cast<size_t>(n));
  if (is_floating(dtype)) {
    std::normal_distribution<double> dist(0.0, 1.0);
    for (double& v : values) v = dist(gen);
  } else if (dtype == DType::Bool) {
    std::bernoulli_distribution dist(0.5);
    for (double& v : values) v = dist(gen) ? 1.0 : 0.0;
  } else {
    const int64_t lo = dtype == DType::UInt8 ? 0 : -100;
    const int64_t hi = dtype == DType::UInt8 ? 255 : 100;
    std::uniform_int_distribution<int64_t> dist(lo, hi);
    for (double& v : values) v = static_cast<double>(dist(gen));
  }
  // from_vector reads an empty shape as 1-D; reshape gives 0-d tensors their shape.
  return from_vector<double>(values, {n}).reshape(shape).to(dtype);
}

// Uniform values in [lo, hi) (e.g. positive inputs for log/sqrt).
inline Tensor random_uniform_tensor(const Shape& shape, DType dtype, double lo, double hi, uint64_t seed = 0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + 777);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(static_cast<size_t>(n));
  for (double& v : values) v = dist(gen);
  return from_vector<double>(values, {n}).reshape(shape).to(dtype);
}

// Compares `got` (any device) with `want` (any device): same shape and dtype,
// values within `tol`. Returns an AssertionResult so it reads well in
// EXPECT_TRUE(...) and carries the details.
inline ::testing::AssertionResult all_close(const Tensor& got, const Tensor& want, Tolerance tol) {
  if (got.shape() != want.shape()) {
    return ::testing::AssertionFailure() << "shape mismatch: got " << got.shape_str() << ", want " << want.shape_str();
  }
  if (got.dtype() != want.dtype()) {
    return ::testing::AssertionFailure() << "dtype mismatch: got " << got.dtype() << ", want " << want.dtype();
  }
  const std::vector<double> g = got.cpu().to_vector<double>();
  const std::vector<double> w = want.cpu().to_vector<double>();
  int64_t bad = 0, worst = -1;
  double worst_excess = 0, max_abs = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double a = g[i], b = w[i];
    bool ok;
    double excess = 0;
    if (std::isnan(a) || std::isnan(b)) {
      ok = std::isnan(a) && std::isnan(b);
      excess = ok ? 0 : INFINITY;
    } else if (std::isinf(a) || std::isinf(b)) {
      ok = a == b;
      excess = ok ? 0 : INFINITY;
    } else {
      const double err = std::abs(a - b);
      max_abs = std::max(max_abs, err);
      excess = err - (tol.atol + tol.rtol * std::abs(b));
      ok = excess <= 0;
    }
    if (!ok) {
      ++bad;
      if (worst < 0 || excess > worst_excess) {
        worst = static_cast<int64_t>(i);
        worst_excess = excess;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << g.size() << " elements differ (dtype " << got.dtype()
                                       << ", shape " << got.shape_str() << ", rtol " << tol.rtol << ", atol "
                                       << tol.atol << "); worst at flat index " << worst << ": got " << g[worst]
                                       << ", want " << w[worst] << "; max |got - want| over finite "
                                       << "elements " << max_abs;
}

inline ::testing::AssertionResult all_close(const Tensor& got, const Tensor& want) {
  return all_close(got, want, tolerance_for(want.dtype()));
}

}  // namespace anvil::test

// EXPECT_CUDA_CLOSE(cuda_result, cpu_reference) and with a Tolerance.
#define EXPECT_CUDA_CLOSE(got, ...) EXPECT_TRUE(::anvil::test::all_close((got), __VA_ARGS__))
#define ASSERT_CUDA_CLOSE(got, ...) ASSERT_TRUE(::anvil::test::all_close((got), __VA_ARGS__))
