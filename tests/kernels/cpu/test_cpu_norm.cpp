// CpuRuntime batch_norm / layer_norm and their backward kernels: forward
// values against statistics computed naively in the test, backward against
// central finite differences of the forward in float64.
#include <gtest/gtest.h>

#include "tests/kernels/cpu/nn_kernel_test_util.h"
#include "core/dispatch.h"

namespace anvil::test {
namespace {

// d(objective)/d(storage[i]) by central differences, for every i.
std::vector<double> numeric_gradient(std::vector<double>& storage, const std::function<double()>& objective,
                                     double eps = 1e-6) {
  std::vector<double> grad(storage.size());
  for (size_t i = 0; i < storage.size(); ++i) {
    const double x = storage[i];
    storage[i] = x + eps;
    const double up = objective();
    storage[i] = x - eps;
    const double down = objective();
    storage[i] = x;
    grad[i] = (up - down) / (2 * eps);
  }
  return grad;
}

double weighted_sum(const TestTensor<double>& a, const TestTensor<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.storage.size(); ++i) s += a.storage[i] * b.storage[i];
  return s;
}

// Per-channel mean and biased variance of [N, C, *] computed naively.
void naive_channel_stats(const View& in, std::vector<double>& mean, std::vector<double>& var) {
  const int64_t c = in.shape[1];
  std::vector<double> sum(c, 0.0), sq(c, 0.0), count(c, 0.0);
  for_each_index(in.shape, [&](const Shape& idx) {
    sum[idx[1]] += at(in, idx);
    count[idx[1]] += 1;
  });
  mean.resize(c);
  for (int64_t i = 0; i < c; ++i) mean[i] = sum[i] / count[i];
  for_each_index(in.shape, [&](const Shape& idx) {
    const double d = at(in, idx) - mean[idx[1]];
    sq[idx[1]] += d * d;
  });
  var.resize(c);
  for (int64_t i = 0; i < c; ++i) var[i] = sq[i] / count[i];
}

std::vector<double> naive_batch_norm(const View& in, const std::vector<double>& mean, const std::vector<double>& var,
                                     const View* weight, const View* bias, double eps) {
  std::vector<double> out;
  for_each_index(in.shape, [&](const Shape& idx) {
    const int64_t c = idx[1];
    const double w = weight ? at(*weight, {c}) : 1.0, b = bias ? at(*bias, {c}) : 0.0;
    out.push_back((at(in, idx) - mean[c]) / std::sqrt(var[c] + eps) * w + b);
  });
  return out;
}

template <typename T, typename S>
void check_batch_norm_training(const Shape& shape, bool affine, bool strided, double tol, std::mt19937& rng) {
  const int64_t c = shape[1];
  const Shape strides = strided ? reversed_padded_strides(shape) : contiguous_strides(shape);
  auto in = random_tensor<T>(shape, strides, rng, 2.0, 5.0);  // a mean far from 0
  auto weight = random_tensor<T>({c}, rng, 0.5, 1.5);
  auto bias = random_tensor<T>({c}, rng);
  auto running_mean = random_tensor<T>({c}, rng);
  auto running_var = random_tensor<T>({c}, rng, 0.5, 2.0);
  const std::vector<double> rm0 = values(running_mean.view), rv0 = values(running_var.view);
  auto out = filled_tensor<T>(shape, strides);
  auto save_mean = filled_tensor<S>({c});
  auto save_invstd = filled_tensor<S>({c});
  BatchNormParams p;
  p.momentum = 0.3;
  p.eps = 1e-3;
  kernel_for<kernel::BatchNorm>(DeviceType::CPU)(out.view, save_mean.view, save_invstd.view, in.view,
                                                 affine ? &weight.view : nullptr, affine ? &bias.view : nullptr,
                                                 &running_mean.view, &running_var.view, p);

  std::vector<double> mean, var;
  naive_channel_stats(in.view, mean, var);
  const std::string name = std::string("batch_norm ") + dtype_name(dtype_of<T>::value) + (strided ? " strided" : "");
  expect_close(
      values(out.view),
      naive_batch_norm(in.view, mean, var, affine ? &weight.view : nullptr, affine ? &bias.view : nullptr, p.eps), tol,
      tol, name + " out");
  std::vector<double> invstd(c), rm(c), rv(c);
  const double n = static_cast<double>(in.view.numel() / c);
  for (int64_t i = 0; i < c; ++i) {
    invstd[i] = 1 / std::sqrt(var[i] + p.eps);
    rm[i] = 0.7 * rm0[i] + 0.3 * mean[i];
    rv[i] = 0.7 * rv0[i] + 0.3 * var[i] * n / (n - 1);  // unbiased, as PyTorch
  }
  expect_close(values(save_mean.view), mean, tol, tol, name + " save_mean");
  expect_close(values(save_invstd.view), invstd, tol, tol, name + " save_invstd");
  expect_close(values(running_mean.view), rm, tol, tol, name + " running_mean");
  expect_close(values(running_var.view), rv, tol, tol, name + " running_var");
}

TEST(CpuBatchNorm, TrainingMatchesNaiveStatistics) {
  std::mt19937 rng(30);
  check_batch_norm_training<double, double>({3, 4, 5, 3}, true, false, 1e-12, rng);
  check_batch_norm_training<double, float>({3, 4, 5, 3}, true, false, 1e-6, rng);
  check_batch_norm_training<double, double>({7, 5}, false, false, 1e-12, rng);  // [N, C]
  check_batch_norm_training<double, double>({2, 3, 4, 5, 2}, true, true, 1e-12, rng);  // 3-D, strided
  check_batch_norm_training<float, float>({4, 6, 7, 7}, true, false, 2e-5, rng);
  check_batch_norm_training<float, float>({4, 6, 7, 7}, true, true, 2e-5, rng);
  check_batch_norm_training<float, float>({16, 8, 20, 20}, true, false, 2e-5, rng);  // takes the threaded path
  check_batch_norm_training<Half, float>({2, 3, 4, 4}, true, false, 1e-2, rng);
}

TEST(CpuBatchNorm, EvalUsesRunningStatistics) {
  std::mt19937 rng(31);
  const Shape shape{3, 4, 5, 2};
  auto in = random_tensor<double>(shape, rng);
  auto weight = random_tensor<double>({4}, rng);
  auto bias = random_tensor<double>({4}, rng);
  auto running_mean = random_tensor<double>({4}, rng);
  auto running_var = random_tensor<double>({4}, rng, 0.5, 2.0);
  const std::vector<double> rm = values(running_mean.view), rv = values(running_var.view);
  auto out = filled_tensor<double>(shape);
  auto save_mean = filled_tensor<float>({4});
  auto save_invstd = filled_tensor<float>({4});
  BatchNormParams p;
  p.training = false;
  kernel_for<kernel::BatchNorm>(DeviceType::CPU)(out.view, save_mean.view, save_invstd.view, in.view, &weight.view,
                                                 &bias.view, &running_mean.view, &running_var.view, p);
  expect_close(values(out.view), naive_batch_norm(in.view, rm, rv, &weight.view, &bias.view, p.eps), 1e-12, 1e-12,
               "eval out");
  expect_close(values(running_mean.view), rm, 0, 0, "running_mean unchanged");
  expect_close(values(running_var.view), rv, 0, 0, "running_var unchanged");
  std::vector<double> invstd(4);
  for (int i = 0; i < 4; ++i) invstd[i] = 1 / std::sqrt(rv[i] + p.eps);
  expect_close(values(save_mean.view), rm, 1e-7, 1e-7, "eval save_mean");
  expect_close(values(save_invstd.view), invstd, 1e-6, 1e-6, "eval save_invstd");
}

// Gradients of sum(batch_norm(x) * r) with respect to x, weight and bias.
void check_batch_norm_backward(bool training, const Shape& shape, bool affine) {
  std::mt19937 rng(training ? 32 : 33);
  const int64_t c = shape[1];
  auto in = random_tensor<double>(shape, rng, -1.0, 3.0);
  auto weight = random_tensor<double>({c}, rng, 0.5, 1.5);
  auto bias = random_tensor<double>({c}, rng);
  auto running_mean = random_tensor<double>({c}, rng);
  auto running_var = random_tensor<double>({c}, rng, 0.5, 2.0);
  auto r = random_tensor<double>(shape, rng);
  auto out = filled_tensor<double>(shape);
  auto save_mean = filled_tensor<double>({c});
  auto save_invstd = filled_tensor<double>({c});
  BatchNormParams p;
  p.training = training;
  // Running stats are read in eval and left alone in training (null).
  const View* rmean = training ? nullptr : &running_mean.view;
  const View* rvar = training ? nullptr : &running_var.view;
  const View* w = affine ? &weight.view : nullptr;
  auto objective = [&] {
    kernel_for<kernel::BatchNorm>(DeviceType::CPU)(out.view, save_mean.view, save_invstd.view, in.view, w,
                                                   affine ? &bias.view : nullptr, rmean, rvar, p);
    return weighted_sum(out, r);
  };
  objective();
  auto grad_in = filled_tensor<double>(shape);
  auto grad_weight = filled_tensor<double>({c});
  auto grad_bias = filled_tensor<double>({c});
  kernel_for<kernel::BatchNormBackward>(DeviceType::CPU)(grad_in.view, &grad_weight.view, &grad_bias.view, r.view,
                                                         in.view, w, save_mean.view, save_invstd.view, p);
  const std::string name = std::string(training ? "training" : "eval") + (affine ? " affine" : "");
  expect_close(values(grad_in.view), numeric_gradient(in.storage, objective), 1e-7, 1e-6, name + " grad_in");
  if (affine) {
    expect_close(values(grad_weight.view), numeric_gradient(weight.storage, objective), 1e-7, 1e-6,
                 name + " grad_weight");
    expect_close(values(grad_bias.view), numeric_gradient(bias.storage, objective), 1e-7, 1e-6, name + " grad_bias");
  }
  // Null gradient outputs are skipped, and grad_in does not depend on them.
  objective();  // the finite differences left perturbed statistics behind
  auto grad_in2 = filled_tensor<double>(shape);
  kernel_for<kernel::BatchNormBackward>(DeviceType::CPU)(grad_in2.view, nullptr, nullptr, r.view, in.view, w,
                                                         save_mean.view, save_invstd.view, p);
  expect_close(values(grad_in2.view), values(grad_in.view), 0, 0, name + " grad_in without param grads");
}

TEST(CpuBatchNorm, TrainingBackwardMatchesFiniteDifferences) {
  check_batch_norm_backward(true, {4, 3, 3, 2}, true);
  check_batch_norm_backward(true, {5, 4}, false);
}

TEST(CpuBatchNorm, EvalBackwardMatchesFiniteDifferences) { check_batch_norm_backward(false, {3, 3, 2, 3}, true); }

TEST(CpuBatchNorm, BackwardFloat32MatchesFloat64) {
  std::mt19937 rng(34);
  const Shape shape{8, 5, 6, 6};
  auto in = random_tensor<double>(shape, rng);
  auto g = random_tensor<double>(shape, rng);
  auto weight = random_tensor<double>({5}, rng);
  auto in32 = tensor_of<float>(shape, values(in.view));
  auto g32 = tensor_of<float>(shape, values(g.view));
  auto weight32 = tensor_of<float>({5}, values(weight.view));
  auto out = filled_tensor<double>(shape);
  auto out32 = filled_tensor<float>(shape);
  auto mean = filled_tensor<double>({5});
  auto invstd = filled_tensor<double>({5});
  auto mean32 = filled_tensor<float>({5});
  auto invstd32 = filled_tensor<float>({5});
  BatchNormParams p;
  kernel_for<kernel::BatchNorm>(DeviceType::CPU)(out.view, mean.view, invstd.view, in.view, &weight.view, nullptr,
                                                 nullptr, nullptr, p);
  kernel_for<kernel::BatchNorm>(DeviceType::CPU)(out32.view, mean32.view, invstd32.view, in32.view, &weight32.view,
                                                 nullptr, nullptr, nullptr, p);
  auto gi = filled_tensor<double>(shape);
  auto gi32 = filled_tensor<float>(shape, strides_in_order(shape, {1, 0, 2, 3}));  // a non-contiguous output
  auto gw = filled_tensor<double>({5});
  auto gw32 = filled_tensor<float>({5});
  kernel_for<kernel::BatchNormBackward>(DeviceType::CPU)(gi.view, &gw.view, nullptr, g.view, in.view, &weight.view,
                                                         mean.view, invstd.view, p);
  kernel_for<kernel::BatchNormBackward>(DeviceType::CPU)(gi32.view, &gw32.view, nullptr, g32.view, in32.view,
                                                         &weight32.view, mean32.view, invstd32.view, p);
  expect_close(values(gi32.view), values(gi.view), 1e-5, 1e-4, "float32 grad_in");
  expect_close(values(gw32.view), values(gw.view), 1e-4, 1e-4, "float32 grad_weight");
}

TEST(CpuBatchNorm, EvalWithoutRunningStatsIsAClearError) {
  auto in = filled_tensor<float>({2, 3}, 1.0);
  auto out = filled_tensor<float>({2, 3});
  auto m = filled_tensor<float>({3});
  auto s = filled_tensor<float>({3});
  BatchNormParams p;
  p.training = false;
  const std::string msg = error_message([&] {
    kernel_for<kernel::BatchNorm>(DeviceType::CPU)(out.view, m.view, s.view, in.view, nullptr, nullptr, nullptr,
                                                   nullptr, p);
  });
  EXPECT_NE(msg.find("running_mean"), std::string::npos) << msg;
}

TEST(CpuBatchNorm, OneValuePerChannelInTrainingIsAClearError) {
  auto in = filled_tensor<float>({1, 3}, 1.0);
  auto out = filled_tensor<float>({1, 3});
  auto m = filled_tensor<float>({3});
  auto s = filled_tensor<float>({3});
  const std::string msg = error_message([&] {
    kernel_for<kernel::BatchNorm>(DeviceType::CPU)(out.view, m.view, s.view, in.view, nullptr, nullptr, nullptr,
                                                   nullptr, BatchNormParams{});
  });
  EXPECT_NE(msg.find("more than 1 value per channel"), std::string::npos) << msg;
}

TEST(CpuBatchNorm, WrongWeightSizeIsAClearError) {
  auto in = filled_tensor<float>({4, 3}, 1.0);
  auto out = filled_tensor<float>({4, 3});
  auto m = filled_tensor<float>({3});
  auto s = filled_tensor<float>({3});
  auto w = filled_tensor<float>({4}, 1.0);
  const std::string msg = error_message([&] {
    kernel_for<kernel::BatchNorm>(DeviceType::CPU)(out.view, m.view, s.view, in.view, &w.view, nullptr, nullptr,
                                                   nullptr, BatchNormParams{});
  });
  EXPECT_NE(msg.find("weight must have 3 elements"), std::string::npos) << msg;
}

// --- layer norm ---

template <typename T, typename S>
void check_layer_norm_forward(int64_t rows, int64_t cols, bool affine, bool strided, double tol, std::mt19937& rng) {
  const Shape shape{rows, cols};
  const Shape strides = strided ? reversed_padded_strides(shape) : contiguous_strides(shape);
  auto in = random_tensor<T>(shape, strides, rng, -2.0, 4.0);
  auto weight = random_tensor<T>({cols}, rng);
  auto bias = random_tensor<T>({cols}, rng);
  auto out = filled_tensor<T>(shape, strides);
  auto mean = filled_tensor<S>({rows});
  auto rstd = filled_tensor<S>({rows});
  const double eps = 1e-4;
  kernel_for<kernel::LayerNorm>(DeviceType::CPU)(out.view, mean.view, rstd.view, in.view,
                                                 affine ? &weight.view : nullptr, affine ? &bias.view : nullptr, eps);
  std::vector<double> ref_out, ref_mean, ref_rstd;
  for (int64_t i = 0; i < rows; ++i) {
    double s = 0, sq = 0;
    for (int64_t j = 0; j < cols; ++j) s += at(in.view, {i, j});
    const double m = s / cols;
    for (int64_t j = 0; j < cols; ++j) sq += (at(in.view, {i, j}) - m) * (at(in.view, {i, j}) - m);
    const double r = 1 / std::sqrt(sq / cols + eps);
    for (int64_t j = 0; j < cols; ++j) {
      const double w = affine ? at(weight.view, {j}) : 1.0, b = affine ? at(bias.view, {j}) : 0.0;
      ref_out.push_back((at(in.view, {i, j}) - m) * r * w + b);
    }
    ref_mean.push_back(m);
    ref_rstd.push_back(r);
  }
  const std::string name = "layer_norm " + std::to_string(rows) + "x" + std::to_string(cols);
  expect_close(values(out.view), ref_out, tol, tol, name + " out");
  expect_close(values(mean.view), ref_mean, tol, tol, name + " mean");
  expect_close(values(rstd.view), ref_rstd, tol, tol, name + " rstd");
}

TEST(CpuLayerNorm, ForwardMatchesNaiveRows) {
  std::mt19937 rng(40);
  check_layer_norm_forward<double, double>(6, 13, true, false, 1e-12, rng);
  check_layer_norm_forward<double, double>(5, 7, false, true, 1e-12, rng);
  check_layer_norm_forward<float, float>(9, 33, true, false, 2e-5, rng);
  check_layer_norm_forward<float, float>(9, 33, true, true, 2e-5, rng);
  check_layer_norm_forward<float, float>(300, 70, true, false, 2e-5, rng);  // threaded
  check_layer_norm_forward<BFloat16, float>(4, 16, true, false, 5e-2, rng);
}

void check_layer_norm_backward(int64_t rows, int64_t cols, bool affine) {
  std::mt19937 rng(41);
  const Shape shape{rows, cols};
  auto in = random_tensor<double>(shape, rng, -1.0, 2.0);
  auto weight = random_tensor<double>({cols}, rng);
  auto bias = random_tensor<double>({cols}, rng);
  auto r = random_tensor<double>(shape, rng);
  auto out = filled_tensor<double>(shape);
  auto mean = filled_tensor<double>({rows});
  auto rstd = filled_tensor<double>({rows});
  const View* w = affine ? &weight.view : nullptr;
  auto objective = [&] {
    kernel_for<kernel::LayerNorm>(DeviceType::CPU)(out.view, mean.view, rstd.view, in.view, w,
                                                   affine ? &bias.view : nullptr, 1e-5);
    return weighted_sum(out, r);
  };
  objective();
  auto grad_in = filled_tensor<double>(shape);
  auto grad_weight = filled_tensor<double>({cols});
  auto grad_bias = filled_tensor<double>({cols});
  kernel_for<kernel::LayerNormBackward>(DeviceType::CPU)(grad_in.view, &grad_weight.view, &grad_bias.view, r.view,
                                                         in.view, mean.view, rstd.view, w);
  const std::string name = "layer_norm " + std::to_string(rows) + "x" + std::to_string(cols);
  expect_close(values(grad_in.view), numeric_gradient(in.storage, objective), 1e-7, 1e-6, name + " grad_in");
  if (affine) {
    expect_close(values(grad_weight.view), numeric_gradient(weight.storage, objective), 1e-7, 1e-6,
                 name + " grad_weight");
    expect_close(values(grad_bias.view), numeric_gradient(bias.storage, objective), 1e-7, 1e-6, name + " grad_bias");
  }
}

TEST(CpuLayerNorm, BackwardMatchesFiniteDifferences) {
  check_layer_norm_backward(5, 11, true);
  check_layer_norm_backward(3, 8, false);
}

TEST(CpuLayerNorm, ParameterGradientsOverManyColumnsMatchNaiveSums) {
  // More than one column block and enough work for threads.
  std::mt19937 rng(42);
  const int64_t rows = 40, cols = 700;
  auto in = random_tensor<float>({rows, cols}, rng);
  auto g = random_tensor<float>({rows, cols}, rng);
  auto out = filled_tensor<float>({rows, cols});
  auto mean = filled_tensor<float>({rows});
  auto rstd = filled_tensor<float>({rows});
  kernel_for<kernel::LayerNorm>(DeviceType::CPU)(out.view, mean.view, rstd.view, in.view, nullptr, nullptr, 1e-5);
  auto gw = filled_tensor<float>({cols});
  auto gb = filled_tensor<float>({cols});
  kernel_for<kernel::LayerNormBackward>(DeviceType::CPU)(View{}, &gw.view, &gb.view, g.view, in.view, mean.view,
                                                         rstd.view, nullptr);
  std::vector<double> ref_gw(cols, 0.0), ref_gb(cols, 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      // out is xhat here (no affine transform).
      ref_gw[j] += at(g.view, {i, j}) * at(out.view, {i, j});
      ref_gb[j] += at(g.view, {i, j});
    }
  expect_close(values(gw.view), ref_gw, 1e-4, 1e-4, "grad_weight");
  expect_close(values(gb.view), ref_gb, 1e-4, 1e-4, "grad_bias");
}

TEST(CpuLayerNorm, WrongStatisticsSizeIsAClearError) {
  auto in = filled_tensor<float>({4, 3}, 1.0);
  auto out = filled_tensor<float>({4, 3});
  auto m = filled_tensor<float>({3});
  auto s = filled_tensor<float>({4});
  const std::string msg = error_message([&] {
    kernel_for<kernel::LayerNorm>(DeviceType::CPU)(out.view, m.view, s.view, in.view, nullptr, nullptr, 1e-5);
  });
  EXPECT_NE(msg.find("layer_norm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 elements"), std::string::npos) << msg;
}

TEST(CpuLayerNorm, IntegerDtypeIsAClearError) {
  auto in = filled_tensor<int32_t>({2, 3}, 1);
  auto out = filled_tensor<int32_t>({2, 3}, 0);
  auto m = filled_tensor<float>({2});
  auto s = filled_tensor<float>({2});
  const std::string msg = error_message([&] {
    kernel_for<kernel::LayerNorm>(DeviceType::CPU)(out.view, m.view, s.view, in.view, nullptr, nullptr, 1e-5);
  });
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::test
