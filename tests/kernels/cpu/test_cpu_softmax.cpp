// CPU softmax / log_softmax and their backward passes, against naive loops
// (forward) and central differences (backward), over every dim and layout.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/shapes/matmul_checks.h"
#include "core/dispatch.h"
#include "tests/kernels/cpu/nn_kernel_test_util.h"

namespace anvil::test {
namespace {

using shapes::transposed;

// Naive softmax of `in` along dim, in double, in row-major order of in's shape.
std::vector<double> naive_softmax(const View& in, int dim, bool log) {
  std::vector<double> out;
  for_each_index(in.shape, [&](const Shape& idx) {
    Shape j = idx;
    double mx = -INFINITY;
    for (j[dim] = 0; j[dim] < in.shape[dim]; ++j[dim]) mx = std::max(mx, at(in, j));
    double sum = 0;
    for (j[dim] = 0; j[dim] < in.shape[dim]; ++j[dim]) sum += std::exp(at(in, j) - mx);
    const double x = at(in, idx);
    out.push_back(log ? x - mx - std::log(sum) : std::exp(x - mx) / sum);
  });
  return out;
}

template <typename T> void check_forward(const View& in, int dim, double rtol, double atol, const std::string& what) {
  const int positive_dim = dim < 0 ? dim + static_cast<int>(in.dim()) : dim;
  for (bool log : {false, true}) {
    auto out = filled_tensor<T>(in.shape);
    kernel_for<kernel::Softmax>(DeviceType::CPU)(out.view, in, dim, log);
    expect_close(values(out.view), naive_softmax(in, positive_dim, log), atol, rtol,
                 what + (log ? " log_softmax" : " softmax") + " dim " + std::to_string(dim));
  }
}

TEST(CpuSoftmax, ForwardEveryDimFloat32) {
  std::mt19937 rng(30);
  auto in = random_tensor<float>({4, 5, 33}, rng, -4, 4);
  for (int dim = 0; dim < 3; ++dim) check_forward<float>(in.view, dim, 1e-5, 1e-7, "float32");
  check_forward<float>(in.view, -1, 1e-5, 1e-7, "float32 negative dim");
}

TEST(CpuSoftmax, ForwardOtherDtypesAndLayouts) {
  std::mt19937 rng(31);
  auto d = random_tensor<double>({6, 17}, rng, -4, 4);
  check_forward<double>(d.view, 1, 1e-13, 1e-15, "float64");
  check_forward<double>(transposed(d.view), 1, 1e-13, 1e-15, "float64 transposed");
  check_forward<double>(transposed(d.view), 0, 1e-13, 1e-15, "float64 transposed");
  auto h = random_tensor<Half>({3, 40}, rng, -3, 3);
  check_forward<Half>(h.view, 1, 2e-3, 1e-4, "float16");
  auto b = random_tensor<BFloat16>({3, 40}, rng, -3, 3);
  check_forward<BFloat16>(b.view, 1, 1e-2, 1e-3, "bfloat16");
  const Shape shape = {3, 4, 5};
  auto padded = random_tensor<float>(shape, reversed_padded_strides(shape), rng);
  for (int dim = 0; dim < 3; ++dim) check_forward<float>(padded.view, dim, 1e-5, 1e-7, "padded");
}

TEST(CpuSoftmax, LargeLogitsAreStable) {
  auto in = tensor_of<float>({2, 3}, {1000, 1001, 1002, -1000, -1001, -1e30});
  auto out = filled_tensor<float>({2, 3});
  kernel_for<kernel::Softmax>(DeviceType::CPU)(out.view, in.view, 1, false);
  for (float v : out.storage) EXPECT_TRUE(std::isfinite(v)) << v;
  EXPECT_NEAR(out.storage[2], 0.66524096, 1e-6);
  EXPECT_EQ(out.storage[5], 0.0f);
  kernel_for<kernel::Softmax>(DeviceType::CPU)(out.view, in.view, 1, true);
  EXPECT_NEAR(out.storage[2], -0.40760596, 1e-5);
  EXPECT_NEAR(out.storage[3], -0.31326169, 1e-5);
}

TEST(CpuSoftmax, LargeInputUsesThreads) {
  std::mt19937 rng(32);
  auto in = random_tensor<float>({300, 130}, rng, -5, 5);
  check_forward<float>(in.view, 1, 1e-5, 1e-7, "large rows");
  check_forward<float>(in.view, 0, 1e-5, 1e-7, "large columns");
}

// grad_in = J^T g, checked against central differences of sum(g * f(x)).
void check_backward(const Shape& shape, int dim, bool log, bool transpose_grad) {
  std::mt19937 rng(33);
  auto x = random_tensor<double>(shape, rng, -2, 2);
  auto g_store = random_tensor<double>(transpose_grad ? Shape{shape[1], shape[0]} : shape, rng);
  const View g = transpose_grad ? transposed(g_store.view) : g_store.view;
  auto y = filled_tensor<double>(shape);
  kernel_for<kernel::Softmax>(DeviceType::CPU)(y.view, x.view, dim, log);
  auto grad_in = filled_tensor<double>(shape);
  kernel_for<kernel::SoftmaxBackward>(DeviceType::CPU)(grad_in.view, g, y.view, dim, log);

  const std::vector<double> gs = values(g);
  auto objective = [&](const std::vector<double>& f) {
    double s = 0;
    for (size_t i = 0; i < f.size(); ++i) s += gs[i] * f[i];
    return s;
  };
  std::vector<double> expected;
  const double h = 1e-6;
  for (size_t i = 0; i < x.storage.size(); ++i) {
    const double saved = x.storage[i];
    x.storage[i] = saved + h;
    const double up = objective(naive_softmax(x.view, dim, log));
    x.storage[i] = saved - h;
    const double down = objective(naive_softmax(x.view, dim, log));
    x.storage[i] = saved;
    expected.push_back((up - down) / (2 * h));
  }
  expect_close(values(grad_in.view), expected, 1e-7, 1e-6,
               std::string(log ? "log_softmax" : "softmax") + " backward dim " + std::to_string(dim));
}

TEST(CpuSoftmax, BackwardMatchesFiniteDifferences) {
  for (bool log : {false, true}) {
    check_backward({3, 7}, 1, log, false);
    check_backward({3, 7}, 0, log, false);
    check_backward({5, 5}, 1, log, true);
  }
}

TEST(CpuSoftmax, BackwardFloat32MatchesFormula) {
  std::mt19937 rng(34);
  auto x = random_tensor<float>({64, 700}, rng, -3, 3);  // large: threaded
  auto g = random_tensor<float>({64, 700}, rng);
  auto y = filled_tensor<float>({64, 700});
  auto gi = filled_tensor<float>({64, 700});
  for (bool log : {false, true}) {
    kernel_for<kernel::Softmax>(DeviceType::CPU)(y.view, x.view, 1, log);
    kernel_for<kernel::SoftmaxBackward>(DeviceType::CPU)(gi.view, g.view, y.view, 1, log);
    std::vector<double> expected;
    for (int64_t r = 0; r < 64; ++r) {
      double s = 0;
      for (int64_t c = 0; c < 700; ++c) s += log ? at(g.view, {r, c}) : at(g.view, {r, c}) * at(y.view, {r, c});
      for (int64_t c = 0; c < 700; ++c) {
        const double gv = at(g.view, {r, c}), yv = at(y.view, {r, c});
        expected.push_back(log ? gv - std::exp(yv) * s : yv * (gv - s));
      }
    }
    expect_close(values(gi.view), expected, 1e-6, 1e-4, log ? "log_softmax backward" : "softmax backward");
  }
}

TEST(CpuSoftmax, IntegerInputThrows) {
  auto in = tensor_of<int32_t>({2, 2}, {1, 2, 3, 4});
  auto out = filled_tensor<int32_t>({2, 2}, 0.0);
  const std::string msg =
      error_message([&] { kernel_for<kernel::Softmax>(DeviceType::CPU)(out.view, in.view, 1, false); });
  EXPECT_NE(msg.find("softmax"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::test
