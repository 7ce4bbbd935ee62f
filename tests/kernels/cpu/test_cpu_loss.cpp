// CpuRuntime cross_entropy and its backward: losses against a naive
// log-softmax, gradients against finite differences in float64.
#include <gtest/gtest.h>

#include "tests/kernels/cpu/nn_kernel_test_util.h"
#include "core/dispatch.h"

namespace anvil::test {
namespace {

// Per-row loss and logsumexp, from the definition: -sum_j q_j log softmax_j
// with q = (1 - ls) one_hot(t) + ls / C.
void naive_cross_entropy(const View& logits, const std::vector<int64_t>& targets, const CrossEntropyParams& p,
                         std::vector<double>& losses, std::vector<double>& lse) {
  const int64_t n = logits.shape[0], c = logits.shape[1];
  losses.assign(n, 0.0);
  lse.assign(n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += std::exp(at(logits, {i, j}));
    lse[i] = std::log(sum);
    if (targets[i] == p.ignore_index) continue;
    for (int64_t j = 0; j < c; ++j) {
      const double q = (j == targets[i] ? 1 - p.label_smoothing : 0.0) + p.label_smoothing / c;
      losses[i] -= q * (at(logits, {i, j}) - lse[i]);
    }
  }
}

std::vector<int64_t> random_targets(int64_t n, int64_t c, int64_t ignore_index, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> cls(0, c - 1);
  std::vector<int64_t> t(n);
  for (int64_t i = 0; i < n; ++i) t[i] = (i % 4 == 2) ? ignore_index : cls(rng);
  return t;
}

TestTensor<int64_t> targets_tensor(const std::vector<int64_t>& t) {
  TestTensor<int64_t> out;
  out.storage = t;
  out.view = View{out.storage.data(), kInt64, {static_cast<int64_t>(t.size())}, {1}};
  return out;
}

template <typename T>
void check_forward(int64_t n, int64_t c, const CrossEntropyParams& p, bool strided, double tol, std::mt19937& rng) {
  const Shape shape{n, c};
  auto logits =
      random_tensor<T>(shape, strided ? reversed_padded_strides(shape) : contiguous_strides(shape), rng, -4.0, 4.0);
  const std::vector<int64_t> t = random_targets(n, c, p.ignore_index, rng);
  auto targets = targets_tensor(t);
  auto losses = filled_tensor<T>({n});
  auto lse = filled_tensor<float>({n});
  kernel_for<kernel::CrossEntropy>(DeviceType::CPU)(losses.view, lse.view, logits.view, targets.view, p);
  std::vector<double> ref_losses, ref_lse;
  naive_cross_entropy(logits.view, t, p, ref_losses, ref_lse);
  const std::string name = std::string("cross_entropy ") + dtype_name(dtype_of<T>::value) + " " + std::to_string(n) +
                           "x" + std::to_string(c) + " ls " + std::to_string(p.label_smoothing);
  expect_close(values(losses.view), ref_losses, tol, tol, name + " losses");
  expect_close(values(lse.view), ref_lse, 1e-6, 1e-6, name + " logsumexp");
  for (int64_t i = 0; i < n; ++i) {
    if (t[i] == p.ignore_index) {
      EXPECT_EQ(at(losses.view, {i}), 0.0) << name << " ignored row " << i;
    }
  }
}

TEST(CpuCrossEntropy, ForwardMatchesNaiveLogSoftmax) {
  std::mt19937 rng(50);
  for (double ls : {0.0, 0.1, 0.35}) {
    CrossEntropyParams p;
    p.label_smoothing = ls;
    check_forward<double>(9, 7, p, false, 1e-12, rng);
    check_forward<double>(9, 7, p, true, 1e-12, rng);
    check_forward<float>(13, 10, p, false, 1e-5, rng);
    check_forward<float>(600, 50, p, false, 1e-5, rng);  // threaded
  }
  CrossEntropyParams custom_ignore;
  custom_ignore.ignore_index = 3;  // a valid class can be the ignored one
  check_forward<double>(8, 5, custom_ignore, false, 1e-12, rng);
  check_forward<BFloat16>(6, 9, CrossEntropyParams{}, false, 5e-2, rng);
}

TEST(CpuCrossEntropy, LargeLogitsDoNotOverflow) {
  auto logits = tensor_of<float>({2, 3}, {1000, 1001, 999, -1000, -1002, -1001});
  auto targets = targets_tensor({1, 0});
  auto losses = filled_tensor<float>({2});
  auto lse = filled_tensor<float>({2});
  kernel_for<kernel::CrossEntropy>(DeviceType::CPU)(losses.view, lse.view, logits.view, targets.view,
                                                    CrossEntropyParams{});
  // Row 0: lse = 1001 + log(1 + e^-1 + e^-2); row 1: lse = -1000 + log(1 + e^-1 + e^-2).
  const double tail = std::log(1 + std::exp(-1.0) + std::exp(-2.0));
  EXPECT_NEAR(at(losses.view, {0}), tail, 1e-4);
  EXPECT_NEAR(at(losses.view, {1}), tail, 1e-4);
  EXPECT_NEAR(at(lse.view, {0}), 1001 + tail, 1e-3);
}

// Gradient of sum_i w_i * loss_i with respect to the logits.
void check_backward(const CrossEntropyParams& p, bool strided_grad) {
  std::mt19937 rng(51);
  const int64_t n = 8, c = 6;
  auto logits = random_tensor<double>({n, c}, rng, -3.0, 3.0);
  const std::vector<int64_t> t = random_targets(n, c, p.ignore_index, rng);
  auto targets = targets_tensor(t);
  auto w = random_tensor<double>({n}, rng);
  auto losses = filled_tensor<double>({n});
  auto lse = filled_tensor<double>({n});  // float64 statistics keep the check exact
  auto objective = [&] {
    kernel_for<kernel::CrossEntropy>(DeviceType::CPU)(losses.view, lse.view, logits.view, targets.view, p);
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += losses.storage[i] * w.storage[i];
    return s;
  };
  objective();
  auto grad =
      filled_tensor<double>({n, c}, strided_grad ? reversed_padded_strides({n, c}) : contiguous_strides({n, c}));
  kernel_for<kernel::CrossEntropyBackward>(DeviceType::CPU)(grad.view, w.view, logits.view, targets.view, lse.view, p);
  std::vector<double> numeric;
  const double eps = 1e-6;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) {
      double& x = logits.storage[i * c + j];
      const double x0 = x;
      x = x0 + eps;
      const double up = objective();
      x = x0 - eps;
      const double down = objective();
      x = x0;
      numeric.push_back((up - down) / (2 * eps));
    }
  expect_close(values(grad.view), numeric, 1e-8, 1e-6,
               "cross_entropy_backward ls " + std::to_string(p.label_smoothing));
  for (int64_t i = 0; i < n; ++i) {
    if (t[i] != p.ignore_index) continue;
    for (int64_t j = 0; j < c; ++j) {
      EXPECT_EQ(at(grad.view, {i, j}), 0.0) << "ignored row " << i;
    }
  }
}

TEST(CpuCrossEntropy, BackwardMatchesFiniteDifferences) {
  CrossEntropyParams p;
  check_backward(p, false);
  p.label_smoothing = 0.2;
  check_backward(p, true);
}

TEST(CpuCrossEntropy, Float32BackwardWithFloat32LogSumExp) {
  std::mt19937 rng(52);
  const int64_t n = 300, c = 70;
  auto logits = random_tensor<float>({n, c}, strides_in_order({n, c}, {1, 0}), rng, -3.0, 3.0);  // transposed
  const std::vector<int64_t> t = random_targets(n, c, -100, rng);
  auto targets = targets_tensor(t);
  auto g = random_tensor<float>({n}, rng);
  auto losses = filled_tensor<float>({n});
  auto lse = filled_tensor<float>({n});
  CrossEntropyParams p;
  p.label_smoothing = 0.1;
  kernel_for<kernel::CrossEntropy>(DeviceType::CPU)(losses.view, lse.view, logits.view, targets.view, p);
  auto grad = filled_tensor<float>({n, c});
  kernel_for<kernel::CrossEntropyBackward>(DeviceType::CPU)(grad.view, g.view, logits.view, targets.view, lse.view, p);
  std::vector<double> expected;
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += std::exp(at(logits.view, {i, j}));
    for (int64_t j = 0; j < c; ++j) {
      if (t[i] == p.ignore_index) {
        expected.push_back(0);
        continue;
      }
      const double q = (j == t[i] ? 0.9 : 0.0) + 0.1 / c;
      expected.push_back(at(g.view, {i}) * (std::exp(at(logits.view, {i, j})) / sum - q));
    }
  }
  expect_close(values(grad.view), expected, 1e-6, 1e-5, "float32 grad_logits");
}

TEST(CpuCrossEntropy, TargetOutOfRangeIsAClearError) {
  auto logits = filled_tensor<float>({3, 4}, 0.5);
  auto losses = filled_tensor<float>({3});
  auto lse = filled_tensor<float>({3});
  for (int64_t bad : {4, 7, -1}) {
    auto targets = targets_tensor({0, bad, 2});
    const std::string msg = error_message([&] {
      kernel_for<kernel::CrossEntropy>(DeviceType::CPU)(losses.view, lse.view, logits.view, targets.view,
                                                        CrossEntropyParams{});
    });
    EXPECT_NE(msg.find("cross_entropy"), std::string::npos) << msg;
    EXPECT_NE(msg.find("target " + std::to_string(bad)), std::string::npos) << msg;
    EXPECT_NE(msg.find("4 classes"), std::string::npos) << msg;
    auto grad = filled_tensor<float>({3, 4});
    const std::string bmsg = error_message([&] {
      kernel_for<kernel::CrossEntropyBackward>(DeviceType::CPU)(grad.view, losses.view, logits.view, targets.view,
                                                                lse.view, CrossEntropyParams{});
    });
    EXPECT_NE(bmsg.find("cross_entropy_backward"), std::string::npos) << bmsg;
  }
}

TEST(CpuCrossEntropy, MismatchedTargetsAreAClearError) {
  auto logits = filled_tensor<float>({3, 4}, 0.5);
  auto losses = filled_tensor<float>({3});
  auto lse = filled_tensor<float>({3});
  auto targets = targets_tensor({0, 1});
  const std::string msg = error_message([&] {
    kernel_for<kernel::CrossEntropy>(DeviceType::CPU)(losses.view, lse.view, logits.view, targets.view,
                                                      CrossEntropyParams{});
  });
  EXPECT_NE(msg.find("targets [3]"), std::string::npos) << msg;
}

TEST(CpuCrossEntropy, IntegerLogitsAreAClearError) {
  auto logits = filled_tensor<int64_t>({2, 3}, 1);
  auto losses = filled_tensor<int64_t>({2}, 0);
  auto lse = filled_tensor<float>({2});
  auto targets = targets_tensor({0, 1});
  const std::string msg = error_message([&] {
    kernel_for<kernel::CrossEntropy>(DeviceType::CPU)(losses.view, lse.view, logits.view, targets.view,
                                                      CrossEntropyParams{});
  });
  EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::test
