// kernel::Matmul against a naive triple loop over operands in every
// layout BLAS may or may not read in place.
#include <gtest/gtest.h>
#include <omp.h>

#include "tests/kernels/cpu/nn_kernel_test_util.h"
#include "core/dispatch.h"

namespace anvil::test {
namespace {

enum class Layout { Contiguous, Transposed, PaddedRows, Strided, BroadcastBatch, TransposedBroadcast };

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Transposed:
      return "transposed";
    case Layout::PaddedRows:
      return "padded-rows";
    case Layout::Strided:
      return "strided";
    case Layout::BroadcastBatch:
      return "broadcast-batch";
    case Layout::TransposedBroadcast:
      return "transposed-broadcast";
  }
  return "?";
}

// Strides of a [B, R, C] operand stored in the given layout.
Shape layout_strides(const Shape& shape, Layout l) {
  switch (l) {
    case Layout::Contiguous:
      return contiguous_strides(shape);
    case Layout::Transposed:
      return strides_in_order(shape, {0, 2, 1});
    case Layout::PaddedRows:
      return strides_in_order(shape, {0, 1, 2}, 5);
    case Layout::Strided:
      return reversed_padded_strides(shape);
    case Layout::BroadcastBatch: {
      Shape s = contiguous_strides(shape);
      s[0] = 0;
      return s;
    }
    case Layout::TransposedBroadcast: {
      Shape s = strides_in_order(shape, {0, 2, 1});
      s[0] = 0;
      return s;
    }
  }
  return {};
}

// alpha * a @ b + beta * out0, from the views' elements.
std::vector<double> reference_matmul(const View& a, const View& b, const std::vector<double>& out0, double alpha,
                                     double beta) {
  const int64_t batch = a.shape[0], m = a.shape[1], k = a.shape[2], n = b.shape[2];
  std::vector<double> out(static_cast<size_t>(batch * m * n));
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t l = 0; l < k; ++l) acc += at(a, {bi, i, l}) * at(b, {bi, l, j});
        const size_t o = static_cast<size_t>((bi * m + i) * n + j);
        out[o] = alpha * acc + (beta == 0 ? 0.0 : beta * out0[o]);
      }
  return out;
}

struct MatmulCase {
  int64_t batch, m, k, n;
  Layout a, b, out;
  float alpha, beta;
};

template <typename T> void run_case(const MatmulCase& c, double tol, std::mt19937& rng) {
  const Shape as{c.batch, c.m, c.k}, bs{c.batch, c.k, c.n}, os{c.batch, c.m, c.n};
  auto a = random_tensor<T>(as, layout_strides(as, c.a), rng);
  auto b = random_tensor<T>(bs, layout_strides(bs, c.b), rng);
  auto out = c.beta == 0 ? filled_tensor<T>(os, layout_strides(os, c.out))
                         : random_tensor<T>(os, layout_strides(os, c.out), rng);
  const std::vector<double> out0 = values(out.view);
  const std::vector<double> expected = reference_matmul(a.view, b.view, out0, c.alpha, c.beta);
  kernel_for<kernel::Matmul>(DeviceType::CPU)(out.view, a.view, b.view, MatmulParams{c.alpha, c.beta});
  expect_close(values(out.view), expected, tol, tol,
               std::string("matmul ") + dtype_name(dtype_of<T>::value) + " [" + std::to_string(c.batch) + "," +
                   std::to_string(c.m) + "," + std::to_string(c.k) + "] @ [" + std::to_string(c.k) + "," +
                   std::to_string(c.n) + "] a " + layout_name(c.a) + ", b " + layout_name(c.b) + ", out " +
                   layout_name(c.out) + " alpha " + std::to_string(c.alpha) + " beta " + std::to_string(c.beta));
}

std::vector<MatmulCase> all_layout_cases() {
  std::vector<MatmulCase> cases;
  const Layout operand_layouts[] = {Layout::Contiguous, Layout::Transposed,     Layout::PaddedRows,
                                    Layout::Strided,    Layout::BroadcastBatch, Layout::TransposedBroadcast};
  const Layout out_layouts[] = {Layout::Contiguous, Layout::Transposed, Layout::PaddedRows, Layout::Strided};
  for (Layout la : operand_layouts)
    for (Layout lb : operand_layouts)
      for (Layout lo : out_layouts) cases.push_back({3, 5, 7, 6, la, lb, lo, 1.0f, 0.0f});
  return cases;
}

TEST(CpuMatmul, Float32EveryLayoutCombination) {
  std::mt19937 rng(1);
  for (const auto& c : all_layout_cases()) run_case<float>(c, 1e-5, rng);
}

TEST(CpuMatmul, Float64EveryLayoutCombination) {
  std::mt19937 rng(2);
  for (const auto& c : all_layout_cases()) run_case<double>(c, 1e-12, rng);
}

// matmul called by the threads of a caller's parallel region (a user's own
// OpenMP loop over requests): each call still computes its whole product, the
// small batched ones spread over threads included (kernels/cpu/parallel_if.h).
TEST(CpuMatmul, CalledFromInsideAParallelRegion) {
  const MatmulCase cases[] = {{4, 5, 7, 6, Layout::Contiguous, Layout::Transposed, Layout::Contiguous, 1.0f, 0.0f},
                              {1, 9, 8, 7, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous, 1.0f, 0.0f},
                              {3, 5, 7, 6, Layout::Strided, Layout::BroadcastBatch, Layout::Contiguous, 1.0f, 0.5f}};
#pragma omp parallel num_threads(2)
  {
    std::mt19937 rng(static_cast<uint32_t>(41 + omp_get_thread_num()));
    for (int repeat = 0; repeat < 3; ++repeat)
      for (const MatmulCase& c : cases) run_case<float>(c, 1e-4, rng);
  }
}

TEST(CpuMatmul, OddSizesAlphaBeta) {
  std::mt19937 rng(3);
  const MatmulCase cases[] = {
      {1, 1, 1, 1, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous, 1.0f, 0.0f},
      {2, 1, 9, 1, Layout::Transposed, Layout::Transposed, Layout::Contiguous, 1.0f, 0.0f},  // vector @ vector
      {2, 17, 33, 9, Layout::Contiguous, Layout::Transposed, Layout::Contiguous, 0.5f, 0.25f},
      {4, 13, 1, 11, Layout::PaddedRows, Layout::Contiguous, Layout::Transposed, -2.0f, 1.0f},  // K = 1
      {3, 31, 64, 1, Layout::Strided, Layout::Contiguous, Layout::Strided, 1.5f, -0.5f},
      {5, 8, 19, 23, Layout::Contiguous, Layout::BroadcastBatch, Layout::Contiguous, 1.0f, 0.0f},  // folds batch
      {5, 8, 19, 23, Layout::Contiguous, Layout::BroadcastBatch, Layout::Contiguous, 0.75f, 2.0f},
      {6, 1, 40, 70, Layout::Contiguous, Layout::TransposedBroadcast, Layout::Contiguous, 1.0f, 0.0f},
      {1, 130, 70, 90, Layout::Transposed, Layout::Transposed, Layout::Transposed, 1.0f, 0.5f},
  };
  for (const auto& c : cases) {
    run_case<float>(c, 1e-4, rng);
    run_case<double>(c, 1e-11, rng);
  }
}

TEST(CpuMatmul, HalfTypesComputeInFloat) {
  std::mt19937 rng(4);
  const MatmulCase cases[] = {
      {2, 7, 13, 5, Layout::Contiguous, Layout::Contiguous, Layout::Contiguous, 1.0f, 0.0f},
      {3, 6, 9, 4, Layout::Transposed, Layout::BroadcastBatch, Layout::Strided, 1.0f, 0.5f},
  };
  // Inputs are exact in 16 bits; the result is rounded once, to 16 bits.
  for (const auto& c : cases) {
    run_case<Half>(c, 4e-3, rng);
    run_case<BFloat16>(c, 2e-2, rng);
  }
}

TEST(CpuMatmul, TwoDimensionalViews) {
  std::mt19937 rng(5);
  auto a = random_tensor<float>({6, 4}, rng);
  auto b = random_tensor<float>({4, 3}, strides_in_order({4, 3}, {1, 0}), rng);
  auto out = filled_tensor<float>({6, 3});
  kernel_for<kernel::Matmul>(DeviceType::CPU)(out.view, a.view, b.view, MatmulParams{});
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      double acc = 0;
      for (int64_t l = 0; l < 4; ++l) acc += at(a.view, {i, l}) * at(b.view, {l, j});
      EXPECT_NEAR(at(out.view, {i, j}), acc, 1e-5);
    }
}

TEST(CpuMatmul, EmptyInnerDimensionScalesOutputByBeta) {
  std::mt19937 rng(6);
  auto a = filled_tensor<float>({2, 3, 0});
  auto b = filled_tensor<float>({2, 0, 4});
  auto out = random_tensor<float>({2, 3, 4}, rng);
  const std::vector<double> before = values(out.view);
  kernel_for<kernel::Matmul>(DeviceType::CPU)(out.view, a.view, b.view, MatmulParams{1.0f, 0.5f});
  std::vector<double> expected = before;
  for (auto& v : expected) v *= 0.5;
  expect_close(values(out.view), expected, 1e-7, 1e-7, "K=0, beta=0.5");

  auto nan_out = filled_tensor<float>({2, 3, 4});  // beta = 0 must not keep NaN
  kernel_for<kernel::Matmul>(DeviceType::CPU)(nan_out.view, a.view, b.view, MatmulParams{});
  expect_close(values(nan_out.view), std::vector<double>(24, 0.0), 0, 0, "K=0, beta=0");
}

TEST(CpuMatmul, EmptyRowsOrColumnsIsANoOp) {
  auto a = filled_tensor<float>({2, 0, 5});
  auto b = filled_tensor<float>({2, 5, 3});
  auto out = filled_tensor<float>({2, 0, 3});
  EXPECT_NO_THROW(kernel_for<kernel::Matmul>(DeviceType::CPU)(out.view, a.view, b.view, MatmulParams{}));
  auto a2 = filled_tensor<float>({2, 4, 5});
  auto b2 = filled_tensor<float>({2, 5, 0});
  auto out2 = filled_tensor<float>({2, 4, 0});
  EXPECT_NO_THROW(kernel_for<kernel::Matmul>(DeviceType::CPU)(out2.view, a2.view, b2.view, MatmulParams{}));
}

TEST(CpuMatmul, IntegerDtypeIsAClearError) {
  auto a = filled_tensor<int32_t>({1, 2, 2}, 1);
  auto b = filled_tensor<int32_t>({1, 2, 2}, 1);
  auto out = filled_tensor<int32_t>({1, 2, 2}, 0);
  const std::string msg =
      error_message([&] { kernel_for<kernel::Matmul>(DeviceType::CPU)(out.view, a.view, b.view, MatmulParams{}); });
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

TEST(CpuMatmul, MismatchedShapesAreAClearError) {
  auto a = filled_tensor<float>({2, 3, 4});
  auto b = filled_tensor<float>({2, 5, 6});
  auto out = filled_tensor<float>({2, 3, 6});
  const std::string msg =
      error_message([&] { kernel_for<kernel::Matmul>(DeviceType::CPU)(out.view, a.view, b.view, MatmulParams{}); });
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3, 4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 5, 6]"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::test
