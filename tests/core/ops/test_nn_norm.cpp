// batch_norm and layer_norm: forward against hand-computed statistics,
// running-stat updates, gradients (first and second order) against finite
// differences, bad arguments.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/core/ops/nn_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::first_grad;
using testing::gradcheck;
using testing::randn64;
using testing::uniform64;

// Per-channel batch statistics of x [N, C, *]: mean and biased variance.
struct ChannelStats {
  std::vector<double> mean, var;
  int64_t count = 0;
};

ChannelStats channel_stats(const Tensor& xt) {
  auto x = xt.to_vector<double>();
  const int64_t N = xt.size(0), C = xt.size(1), inner = xt.numel() / (N * C);
  ChannelStats s{std::vector<double>(C, 0.0), std::vector<double>(C, 0.0), N * inner};
  for (int64_t c = 0; c < C; ++c) {
    double total = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) total += x[(n * C + c) * inner + i];
    s.mean[c] = total / static_cast<double>(s.count);
    double sq = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) sq += std::pow(x[(n * C + c) * inner + i] - s.mean[c], 2);
    s.var[c] = sq / static_cast<double>(s.count);
  }
  return s;
}

// (x - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c] over x [N, C, *].
std::vector<double> normalize_channels(const Tensor& xt, const std::vector<double>& mean,
                                       const std::vector<double>& var, const Tensor& w, const Tensor& b, double eps) {
  auto x = xt.to_vector<double>();
  auto wv = w.defined() ? w.to_vector<double>() : std::vector<double>(mean.size(), 1.0);
  auto bv = b.defined() ? b.to_vector<double>() : std::vector<double>(mean.size(), 0.0);
  const int64_t N = xt.size(0), C = xt.size(1), inner = xt.numel() / (N * C);
  std::vector<double> out(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = (n * C + c) * inner + i;
        out[k] = (x[k] - mean[c]) / std::sqrt(var[c] + eps) * wv[c] + bv[c];
      }
  return out;
}

TEST(NnBatchNorm, TrainingForwardAndRunningStats) {
  manual_seed(11);
  for (DType dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-9 : 1e-4;
    Tensor x = (randn({4, 3, 2, 5}, dt) * 2.0 + 0.5), w = randn({3}, dt), b = randn({3}, dt);
    Tensor rm = randn({3}, dt), rv = rand({3}, dt) + 0.5;
    auto rm0 = rm.to_vector<double>(), rv0 = rv.to_vector<double>();
    BatchNormOptions o;
    o.momentum = 0.2;
    o.eps = 1e-3;
    Tensor y = batch_norm(x, w, b, rm, rv, o);
    ChannelStats s = channel_stats(x);
    expect_near_vec(y.to_vector<double>(), normalize_channels(x, s.mean, s.var, w, b, o.eps), tol, "out");
    std::vector<double> want_rm, want_rv;
    for (int c = 0; c < 3; ++c) {
      want_rm.push_back(0.8 * rm0[c] + 0.2 * s.mean[c]);
      // The running variance is the unbiased one.
      want_rv.push_back(0.8 * rv0[c] + 0.2 * s.var[c] * s.count / (s.count - 1.0));
    }
    expect_near_vec(rm.to_vector<double>(), want_rm, tol, "running_mean");
    expect_near_vec(rv.to_vector<double>(), want_rv, tol, "running_var");
  }
}

TEST(NnBatchNorm, EvalUsesRunningStatsAndLeavesThem) {
  manual_seed(12);
  Tensor x = randn64({3, 4, 5}), w = randn64({4}), b = randn64({4});
  Tensor rm = randn64({4}), rv = uniform64({4}, 0.5, 2.0);
  auto rm0 = rm.to_vector<double>(), rv0 = rv.to_vector<double>();
  BatchNormOptions o;
  o.training = false;
  Tensor y = batch_norm(x, w, b, rm, rv, o);
  expect_near_vec(y.to_vector<double>(), normalize_channels(x, rm0, rv0, w, b, o.eps), 1e-10);
  expect_near_vec(rm.to_vector<double>(), rm0, 0);
  expect_near_vec(rv.to_vector<double>(), rv0, 0);
}

TEST(NnBatchNorm, TwoDimInputWithoutAffineOrRunningStats) {
  manual_seed(13);
  Tensor x = randn64({6, 4});
  Tensor y = batch_norm(x, {}, {}, {}, {});
  ChannelStats s = channel_stats(x);
  expect_near_vec(y.to_vector<double>(), normalize_channels(x, s.mean, s.var, {}, {}, 1e-5), 1e-9);
}

TEST(NnBatchNorm, Gradcheck) {
  manual_seed(14);
  BatchNormOptions train;
  BatchNormOptions eval;
  eval.training = false;
  Tensor rm = randn64({3}), rv = uniform64({3}, 0.5, 2.0);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return batch_norm(t[0], t[1], t[2], rm, rv, train); },
                        {randn64({4, 3, 2, 2}), randn64({3}), randn64({3})}))
      << "training";
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return batch_norm(t[0], {}, {}, {}, {}, train); },
                        {randn64({5, 3})}))
      << "training, 2-D, no affine";
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return batch_norm(t[0], t[1], t[2], rm, rv, eval); },
                        {randn64({2, 3, 3}), randn64({3}), randn64({3})}))
      << "eval";
}

TEST(NnBatchNorm, DoubleBackward) {
  manual_seed(15);
  Tensor rm = randn64({3}), rv = uniform64({3}, 0.5, 2.0);
  for (bool training : {true, false}) {
    BatchNormOptions o;
    o.training = training;
    auto f = [&, o](const std::vector<Tensor>& t) { return batch_norm(t[0], t[1], t[2], rm, rv, o); };
    std::vector<Tensor> in{randn64({3, 3, 2}), randn64({3}), randn64({3})};
    Tensor wy = randn64({3, 3, 2});
    for (size_t which : {0u, 1u}) {
      EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return first_grad(f, t, which, wy); }, in))
          << (training ? "training" : "eval") << ", d/d(input " << which << ")";
    }
  }
}

TEST(NnBatchNorm, RejectsBadArguments) {
  Tensor x = randn({4, 3, 2});
  Tensor rm = zeros({3}), rv = ones({3});
  expect_error([&] { batch_norm(randn({5}), {}, {}, {}, {}); }, {"batch_norm", "at least 2 dims"});
  expect_error([&] { batch_norm(x, randn({4}), {}, rm, rv); }, {"batch_norm", "weight", "[3]", "[4]"});
  expect_error([&] { batch_norm(x, {}, randn({3, 1}), rm, rv); }, {"batch_norm", "bias"});
  expect_error([&] { batch_norm(x, {}, {}, rm, {}); }, {"batch_norm", "together"});
  BatchNormOptions eval;
  eval.training = false;
  expect_error([&] { batch_norm(x, {}, {}, {}, {}, eval); }, {"batch_norm", "running_mean"});
  expect_error([&] { batch_norm(randn({1, 3}), {}, {}, rm, rv); }, {"batch_norm", "more than 1 value per channel"});
  expect_error([&] { batch_norm(x.to(kInt64), {}, {}, rm, rv); }, {"batch_norm", "floating", "int64"});
  Tensor rm_grad = zeros({3}).requires_grad_();
  expect_error([&] { batch_norm(x, {}, {}, rm_grad, rv); }, {"batch_norm", "must not require grad"});
}

// --- layer norm ---

// Normalises each row of `cols` trailing elements.
std::vector<double> naive_layer_norm(const Tensor& xt, int64_t cols, const Tensor& w, const Tensor& b, double eps) {
  auto x = xt.to_vector<double>();
  auto wv = w.defined() ? w.to_vector<double>() : std::vector<double>(cols, 1.0);
  auto bv = b.defined() ? b.to_vector<double>() : std::vector<double>(cols, 0.0);
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size() / cols; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += x[r * cols + j];
    mean /= static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j) var += std::pow(x[r * cols + j] - mean, 2);
    var /= static_cast<double>(cols);
    for (int64_t j = 0; j < cols; ++j)
      out[r * cols + j] = (x[r * cols + j] - mean) / std::sqrt(var + eps) * wv[j] + bv[j];
  }
  return out;
}

TEST(NnLayerNorm, ForwardMatchesHandComputedStats) {
  manual_seed(21);
  for (DType dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-10 : 1e-4;
    Tensor x = randn({2, 3, 4}, dt) * 3.0 - 1.0;
    Tensor w = randn({3, 4}, dt), b = randn({3, 4}, dt);
    Tensor y = layer_norm(x, {3, 4}, w, b, 1e-3);
    EXPECT_EQ(y.shape(), x.shape());
    expect_near_vec(y.to_vector<double>(), naive_layer_norm(x, 12, w, b, 1e-3), tol, "normalized [3, 4]");
    Tensor y4 = layer_norm(x, {4});
    expect_near_vec(y4.to_vector<double>(), naive_layer_norm(x, 4, {}, {}, 1e-5), tol, "normalized [4]");
  }
  // A non-contiguous input normalises its logical rows.
  Tensor xt = randn64({4, 3}).t();
  expect_near_vec(layer_norm(xt, {4}).to_vector<double>(), naive_layer_norm(xt.contiguous(), 4, {}, {}, 1e-5), 1e-10);
}

TEST(NnLayerNorm, Gradcheck) {
  manual_seed(22);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& t) {
        return layer_norm(t[0], {3, 4}, t[1], t[2]);
      },
      {randn64({2, 3, 4}), randn64({3, 4}), randn64({3, 4})}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return layer_norm(t[0], {5}); }, {randn64({3, 5})}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return layer_norm(t[0], {4}, t[1]); },
                        {randn64({4, 3}).t(), randn64({4})}))
      << "weight only";
}

TEST(NnLayerNorm, DoubleBackward) {
  manual_seed(23);
  auto f = [](const std::vector<Tensor>& t) { return layer_norm(t[0], {4}, t[1], t[2]); };
  std::vector<Tensor> in{randn64({3, 4}), randn64({4}), randn64({4})};
  Tensor wy = randn64({3, 4});
  for (size_t which : {0u, 1u}) {
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return first_grad(f, t, which, wy); }, in))
        << "d/d(input " << which << ")";
  }
}

TEST(NnLayerNorm, RejectsBadArguments) {
  Tensor x = randn({2, 3, 4});
  expect_error([&] { layer_norm(x, {5}); }, {"layer_norm", "normalized_shape", "[5]", "[2, 3, 4]"});
  expect_error([&] { layer_norm(x, {2, 3, 4, 1}); }, {"layer_norm", "normalized_shape"});
  expect_error([&] { layer_norm(x, {}); }, {"layer_norm", "at least one"});
  expect_error([&] { layer_norm(x, {3, 4}, randn({4})); }, {"layer_norm", "weight", "[3, 4]"});
  expect_error([&] { layer_norm(x, {4}, {}, randn({3})); }, {"layer_norm", "bias", "[4]"});
  expect_error([&] { layer_norm(x.to(kInt32), {4}); }, {"layer_norm", "floating"});
}

}  // namespace
}  // namespace anvil
