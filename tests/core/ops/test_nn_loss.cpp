// Losses: cross_entropy, nll_loss, mse_loss, binary_cross_entropy_with_logits.
// Forward against hand loops (log-softmax written out), ignore_index, label
// smoothing, gradients (first and second order), bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/core/ops/nn_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::first_grad;
using testing::gradcheck;
using testing::randn64;

Tensor targets_of(const std::vector<int64_t>& t) { return from_vector<int64_t>(t); }

// Per-row cross entropy with label smoothing eps: with lse the row's
// log-sum-exp, (1 - eps) (lse - x_t) + eps / C * sum_c (lse - x_c); 0 for
// ignored rows.
std::vector<double> naive_ce_rows(const Tensor& logits, const std::vector<int64_t>& t, int64_t ignore, double eps) {
  auto x = logits.to_vector<double>();
  const int64_t N = logits.size(0), C = logits.size(1);
  std::vector<double> rows(N, 0.0);
  for (int64_t i = 0; i < N; ++i) {
    if (t[i] == ignore) continue;
    const double* r = &x[i * C];
    const double m = *std::max_element(r, r + C);
    double s = 0, all = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(r[c] - m);
    const double lse = m + std::log(s);
    for (int64_t c = 0; c < C; ++c) all += lse - r[c];
    rows[i] = (1 - eps) * (lse - r[t[i]]) + eps / static_cast<double>(C) * all;
  }
  return rows;
}

double naive_mean(const std::vector<double>& rows, const std::vector<int64_t>& t, int64_t ignore) {
  double total = 0;
  int count = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    if (t[i] != ignore) total += rows[i], ++count;
  return total / count;
}

double naive_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

CrossEntropyOptions ce_options(Reduction r, int64_t ignore = -100, double smoothing = 0.0) {
  CrossEntropyOptions o;
  o.reduction = r;
  o.ignore_index = ignore;
  o.label_smoothing = smoothing;
  return o;
}

TEST(NnCrossEntropy, ForwardMatchesLogSoftmaxLoops) {
  manual_seed(31);
  const std::vector<int64_t> t{2, -100, 0, 3, 1, 3};
  for (DType dt : {kFloat64, kFloat32}) {
    const double tol = dt == kFloat64 ? 1e-10 : 1e-5;
    Tensor x = randn({6, 4}, dt) * 3.0;
    for (double eps : {0.0, 0.1}) {
      auto rows = naive_ce_rows(x, t, -100, eps);
      Tensor none = cross_entropy(x, targets_of(t), ce_options(Reduction::None, -100, eps));
      EXPECT_EQ(none.shape(), (Shape{6}));
      EXPECT_EQ(none.dtype(), dt);
      expect_near_vec(none.to_vector<double>(), rows, tol, "none");
      EXPECT_NEAR(cross_entropy(x, targets_of(t), ce_options(Reduction::Sum, -100, eps)).item<double>(),
                  naive_sum(rows), tol * 6);
      // Mean divides by the 5 rows that are not ignored, with or without smoothing.
      EXPECT_NEAR(cross_entropy(x, targets_of(t), ce_options(Reduction::Mean, -100, eps)).item<double>(),
                  naive_mean(rows, t, -100), tol);
    }
  }
}

TEST(NnCrossEntropy, CustomIgnoreIndexAndAllIgnored) {
  manual_seed(32);
  Tensor x = randn64({4, 3});
  const std::vector<int64_t> t{1, 2, 2, 0};
  auto rows = naive_ce_rows(x, t, 2, 0.0);
  EXPECT_NEAR(cross_entropy(x, targets_of(t), ce_options(Reduction::Mean, 2)).item<double>(), naive_mean(rows, t, 2),
              1e-10);
  // Every target ignored: 0 / 0, as in PyTorch.
  EXPECT_TRUE(std::isnan(cross_entropy(x, targets_of({2, 2, 2, 2}), ce_options(Reduction::Mean, 2)).item<double>()));
}

TEST(NnCrossEntropy, LargeLogitsStayFinite) {
  Tensor x = from_vector<float>({1000.f, 0.f, -1000.f, -1000.f, 999.f, 1000.f}, {2, 3});
  auto v = cross_entropy(x, targets_of({0, 1}), ce_options(Reduction::None)).to_vector<double>();
  EXPECT_NEAR(v[0], 0.0, 1e-5);
  EXPECT_NEAR(v[1], 1.0 + std::log1p(std::exp(-1.0)), 1e-4);  // lse - 999 with lse = 1000 + log(1 + e^-1)
}

TEST(NnCrossEntropy, UnbatchedAndSpatialInputs) {
  manual_seed(33);
  Tensor x = randn64({5});
  Tensor one = cross_entropy(x, scalar_tensor(3, kInt64), ce_options(Reduction::None));
  EXPECT_EQ(one.dim(), 0);
  EXPECT_NEAR(one.item<double>(), naive_ce_rows(x.unsqueeze(0), {3}, -100, 0)[0], 1e-10);
  // [N, C, d] is [N * d, C] with the class dim moved last.
  Tensor xs = randn64({2, 3, 4});
  Tensor ts = from_vector<int64_t>({0, 1, 2, -100, 2, 2, 1, 0}, {2, 4});
  Tensor per = cross_entropy(xs, ts, ce_options(Reduction::None, -100, 0.2));
  EXPECT_EQ(per.shape(), (Shape{2, 4}));
  auto rows = naive_ce_rows(xs.permute({0, 2, 1}).reshape({8, 3}), ts.to_vector<int64_t>(), -100, 0.2);
  expect_near_vec(per.to_vector<double>(), rows, 1e-10);
}

TEST(NnCrossEntropy, Gradcheck) {
  manual_seed(34);
  const std::vector<int64_t> t{2, -100, 0, 3, 1};
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
    for (double eps : {0.0, 0.15}) {
      auto o = ce_options(r, -100, eps);
      EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return cross_entropy(in[0], targets_of(t), o); },
                            {randn64({5, 4})}))
          << "reduction " << static_cast<int>(r) << " smoothing " << eps;
    }
  }
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return cross_entropy(in[0], from_vector<int64_t>({1, 0}, {1, 2}));
      },
      {randn64({1, 3, 2})}))
      << "spatial";
}

TEST(NnCrossEntropy, DoubleBackward) {
  manual_seed(35);
  const std::vector<int64_t> t{2, -100, 0, 3};
  auto o = ce_options(Reduction::Mean, -100, 0.1);
  auto f = [&](const std::vector<Tensor>& in) { return cross_entropy(in[0], targets_of(t), o); };
  Tensor wy = scalar_tensor(1.0, kFloat64);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return first_grad(f, in, 0, wy); }, {randn64({4, 4})}));
}

TEST(NnCrossEntropy, RejectsBadArguments) {
  Tensor x = randn({3, 4});
  expect_error([&] { cross_entropy(x, targets_of({0, 4, 1})); }, {"cross_entropy", "target 4", "4 classes"});
  expect_error([&] { cross_entropy(x, targets_of({0, -1, 1})); }, {"cross_entropy", "target -1"});
  expect_error([&] { cross_entropy(x, from_vector<float>({0, 1, 2})); }, {"cross_entropy", "int64", "float32"});
  expect_error([&] { cross_entropy(x, targets_of({0, 1})); }, {"cross_entropy", "[3]", "[2]"});
  expect_error([&] { cross_entropy(x.to(kInt64), targets_of({0, 1, 2})); }, {"cross_entropy", "floating"});
  expect_error(
      [&] {
        cross_entropy(x, targets_of({0, 1, 2}), ce_options(Reduction::Mean, -100, 1.5));
      },
      {"cross_entropy", "label_smoothing"});
  expect_error([&] { cross_entropy(randn({2, 3, 4}), targets_of({0, 1})); }, {"cross_entropy", "[2, 4]"});
  expect_error([&] { cross_entropy(scalar_tensor(1.0), targets_of({0})); }, {"cross_entropy", "0-d"});
}

// --- nll_loss ---

TEST(NnNllLoss, ForwardPicksNegatedLogProbs) {
  manual_seed(41);
  Tensor lp = randn64({5, 3});
  const std::vector<int64_t> t{2, 0, -100, 1, 2};
  auto v = lp.to_vector<double>();
  std::vector<double> rows;
  for (int i = 0; i < 5; ++i) rows.push_back(t[i] == -100 ? 0.0 : -v[i * 3 + t[i]]);
  expect_near_vec(nll_loss(lp, targets_of(t), ce_options(Reduction::None)).to_vector<double>(), rows, 0);
  EXPECT_NEAR(nll_loss(lp, targets_of(t), ce_options(Reduction::Sum)).item<double>(), naive_sum(rows), 1e-12);
  EXPECT_NEAR(nll_loss(lp, targets_of(t)).item<double>(), naive_sum(rows) / 4, 1e-12);
}

TEST(NnNllLoss, OfLogSoftmaxEqualsCrossEntropy) {
  manual_seed(42);
  Tensor x = randn64({6, 5});
  Tensor t = targets_of({4, 0, -100, 2, 2, 1});
  for (double eps : {0.0, 0.3}) {
    for (Reduction r : {Reduction::None, Reduction::Mean}) {
      auto o = ce_options(r, -100, eps);
      expect_near_vec(nll_loss(log_softmax(x, 1), t, o).to_vector<double>(), cross_entropy(x, t, o).to_vector<double>(),
                      1e-10);
    }
  }
}

TEST(NnNllLoss, GradcheckAndDoubleBackward) {
  manual_seed(43);
  Tensor t = targets_of({1, -100, 0, 2});
  for (double eps : {0.0, 0.2}) {
    auto o = ce_options(Reduction::Mean, -100, eps);
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return nll_loss(in[0], t, o); }, {randn64({4, 3})}));
  }
  auto f = [&](const std::vector<Tensor>& in) { return nll_loss(log_softmax(in[0], 1), t); };
  Tensor wy = scalar_tensor(1.0, kFloat64);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return first_grad(f, in, 0, wy); }, {randn64({4, 3})}));
}

TEST(NnNllLoss, RejectsBadArguments) {
  Tensor lp = randn({2, 3});
  expect_error([&] { nll_loss(lp, targets_of({0, 3})); }, {"nll_loss", "target 3", "3 classes"});
  expect_error([&] { nll_loss(lp, from_vector<int32_t>({0, 1})); }, {"nll_loss", "int64"});
  expect_error([&] { nll_loss(lp, targets_of({0, 1, 2})); }, {"nll_loss", "[2]", "[3]"});
}

// --- mse_loss ---

TEST(NnMseLoss, ForwardGradcheckAndDoubleBackward) {
  manual_seed(51);
  Tensor a = randn64({3, 4}), b = randn64({3, 4});
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<double> sq;
  for (size_t i = 0; i < va.size(); ++i) sq.push_back((va[i] - vb[i]) * (va[i] - vb[i]));
  expect_near_vec(mse_loss(a, b, Reduction::None).to_vector<double>(), sq, 1e-12);
  EXPECT_NEAR(mse_loss(a, b, Reduction::Sum).item<double>(), naive_sum(sq), 1e-10);
  EXPECT_NEAR(mse_loss(a, b).item<double>(), naive_sum(sq) / 12, 1e-12);
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None})
    EXPECT_TRUE(gradcheck([r](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1], r); }, {a, b}));
  auto f = [](const std::vector<Tensor>& in) { return mse_loss(in[0] * in[0], in[1]); };
  Tensor wy = scalar_tensor(1.0, kFloat64);
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return first_grad(f, in, 0, wy); }, {a, b}));
  expect_error([] { mse_loss(randn({3, 1}), randn({3})); }, {"mse_loss", "[3, 1]", "[3]", "same shape"});
  expect_error([] { mse_loss(randn({3}), ones({3}, kInt64)); }, {"mse_loss", "target", "floating"});
}

// --- binary_cross_entropy_with_logits ---

TEST(NnBceWithLogits, ForwardMatchesFormulaAndIsStable) {
  manual_seed(61);
  Tensor x = randn64({4, 3}) * 2.0, t = rand({4, 3}, kFloat64);
  auto vx = x.to_vector<double>(), vt = t.to_vector<double>();
  std::vector<double> want;
  for (size_t i = 0; i < vx.size(); ++i) {
    const double p = 1.0 / (1.0 + std::exp(-vx[i]));
    want.push_back(-(vt[i] * std::log(p) + (1 - vt[i]) * std::log(1 - p)));
  }
  expect_near_vec(binary_cross_entropy_with_logits(x, t, Reduction::None).to_vector<double>(), want, 1e-10);
  EXPECT_NEAR(binary_cross_entropy_with_logits(x, t).item<double>(), naive_sum(want) / 12, 1e-10);
  EXPECT_NEAR(binary_cross_entropy_with_logits(x, t, Reduction::Sum).item<double>(), naive_sum(want), 1e-9);
  // Where the naive formula overflows: log(1 + e^100) = 100 (+ e^-100).
  Tensor big = from_vector<float>({100.f, -100.f, 100.f});
  Tensor tb = from_vector<float>({0.f, 1.f, 1.f});
  expect_near_vec(binary_cross_entropy_with_logits(big, tb, Reduction::None).to_vector<double>(), {100, 100, 0}, 1e-4);
}

TEST(NnBceWithLogits, GradientAtZeroLogitIsSigmoidMinusTarget) {
  // The composed formula (relu, abs) would give -t at x = 0; the true
  // derivative is sigmoid(0) - t.
  Tensor x = zeros({3}, kFloat64).requires_grad_();
  Tensor t = from_vector<double>({0.0, 0.3, 1.0});
  binary_cross_entropy_with_logits(x, t, Reduction::Sum).backward();
  expect_near_vec(x.grad().to_vector<double>(), {0.5, 0.2, -0.5}, 1e-12);
}

TEST(NnBceWithLogits, GradcheckAndDoubleBackward) {
  manual_seed(62);
  std::vector<Tensor> in{randn64({3, 4}), rand({3, 4}, kFloat64)};
  for (Reduction r : {Reduction::Mean, Reduction::None})
    EXPECT_TRUE(
        gradcheck([r](const std::vector<Tensor>& t) { return binary_cross_entropy_with_logits(t[0], t[1], r); }, in));
  auto f = [](const std::vector<Tensor>& t) { return binary_cross_entropy_with_logits(t[0], t[1]); };
  Tensor wy = scalar_tensor(1.0, kFloat64);
  for (size_t which : {0u, 1u})
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return first_grad(f, t, which, wy); }, in))
        << "d/d(input " << which << ")";
}

TEST(NnBceWithLogits, RejectsBadArguments) {
  expect_error(
      [] {
        binary_cross_entropy_with_logits(randn({4}), rand({4, 1}));
      },
      {"binary_cross_entropy_with_logits", "[4]", "[4, 1]"});
  expect_error([] { binary_cross_entropy_with_logits(randn({4}), ones({4}, kInt64)); },
               {"binary_cross_entropy_with_logits", "target", "floating"});
}

}  // namespace
}  // namespace anvil
