// Reductions, arg-reductions and softmax: values against naive loops over
// host data, gradients against finite differences, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_all;
using testing::f64;
using testing::gradcheck;
using testing::gradgradcheck;
using testing::naive_reduce;
using testing::slices;
using Values = std::vector<double>;

double vsum(const Values& v) { return std::accumulate(v.begin(), v.end(), 0.0); }
double vmean(const Values& v) { return vsum(v) / static_cast<double>(v.size()); }
double vprod(const Values& v) { return std::accumulate(v.begin(), v.end(), 1.0, std::multiplies<>()); }
double vmax(const Values& v) { return *std::max_element(v.begin(), v.end()); }
double vmin(const Values& v) { return *std::min_element(v.begin(), v.end()); }
double vvar(const Values& v, int64_t correction) {
  double m = vmean(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(static_cast<int64_t>(v.size()) - correction);
}
double vnorm(const Values& v, double p) {
  if (std::isinf(p)) {
    double m = 0;
    for (double x : v) m = std::max(m, std::abs(x));
    return m;
  }
  if (p == 0) return static_cast<double>(std::count_if(v.begin(), v.end(), [](double x) { return x != 0; }));
  double s = 0;
  for (double x : v) s += std::pow(std::abs(x), p);
  return std::pow(s, 1.0 / p);
}

struct DimsCase {
  std::vector<int64_t> dims;
  bool keepdim;
  Shape expected_shape;  // for an input of shape [2, 3, 4]
};

const std::vector<DimsCase> kDimsCases = {
    {{}, false, {}},           {{}, true, {1, 1, 1}},  {{1}, false, {2, 4}},
    {{1}, true, {2, 1, 4}},    {{-1}, false, {2, 3}},  {{0, 2}, false, {3}},
    {{2, 0}, true, {1, 3, 1}}, {{-3, -2}, false, {4}}, {{0, 1, 2}, false, {}},
};

TEST(Reduce, SumMeanProdMatchNaiveLoopsForEveryDimsCase) {
  Tensor x = randn({2, 3, 4}, f64());
  for (const auto& c : kDimsCases) {
    SCOPED_TRACE(::testing::Message() << "dims " << ::testing::PrintToString(c.dims) << " keepdim " << c.keepdim);
    Tensor s = sum(x, c.dims, c.keepdim), m = mean(x, c.dims, c.keepdim), p = prod(x, c.dims, c.keepdim);
    EXPECT_EQ(s.shape(), c.expected_shape);
    EXPECT_EQ(m.shape(), c.expected_shape);
    EXPECT_EQ(p.shape(), c.expected_shape);
    EXPECT_EQ(s.dtype(), kFloat64);
    expect_near_all(s.to_vector<double>(), naive_reduce(x, c.dims, vsum), 1e-12);
    expect_near_all(m.to_vector<double>(), naive_reduce(x, c.dims, vmean), 1e-12);
    expect_near_all(p.to_vector<double>(), naive_reduce(x, c.dims, vprod), 1e-12);
  }
}

TEST(Reduce, WorksOnTransposedAndSlicedInputs) {
  Tensor base = randn({4, 6}, f64());
  Tensor xt = base.t();  // [6, 4], not contiguous
  Tensor xs = base.slice(1, 1, 6, 2);  // [4, 3], stride 2
  for (const Tensor& x : {xt, xs}) {
    ASSERT_FALSE(x.is_contiguous());
    expect_near_all(sum(x, {0}).to_vector<double>(), naive_reduce(x, {0}, vsum), 1e-12);
    expect_near_all(amax(x, {1}).to_vector<double>(), naive_reduce(x, {1}, vmax), 0);
    expect_near_all(var(x, {0}).to_vector<double>(), naive_reduce(x, {0}, [](const Values& v) { return vvar(v, 1); }),
                    1e-12);
    expect_near_all(softmax(x, 1).sum({1}).to_vector<double>(), Values(x.shape()[0], 1.0), 1e-12);
  }
}

TEST(Reduce, Float32SumIsAccurate) {
  Tensor x = randn({3, 1000});
  expect_near_all(sum(x, {1}).to_vector<double>(), naive_reduce(x, {1}, vsum), 1e-3);
  expect_near_all(mean(x).to_vector<double>(), naive_reduce(x, {}, vmean), 1e-5);
}

TEST(Reduce, HalfPrecisionKeepsItsDtype) {
  for (DType t : {kFloat16, kBFloat16}) {
    Tensor x = ones({3, 64}, t);
    Tensor s = sum(x, {1});
    EXPECT_EQ(s.dtype(), t);
    expect_near_all(s.to_vector<double>(), {64, 64, 64}, 0);
    EXPECT_EQ(mean(x).dtype(), t);
    EXPECT_EQ(softmax(x, 1).dtype(), t);
    EXPECT_NEAR(softmax(x, 1).to_vector<double>()[5], 1.0 / 64, 1e-3);
  }
}

TEST(Reduce, IntegerAndBoolSumGiveInt64) {
  Tensor xi = from_vector(std::vector<int32_t>{1, -2, 3, 4, 5, 6}, {2, 3});
  Tensor s = sum(xi, {1});
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{2, 15}));
  Tensor b = gt(xi, 2);
  Tensor count = sum(b);
  EXPECT_EQ(count.dtype(), kInt64);
  EXPECT_EQ(count.item<int64_t>(), 4);
  Tensor p = prod(xi, {0});
  EXPECT_EQ(p.dtype(), kInt64);
  EXPECT_EQ(p.to_vector<int64_t>(), (std::vector<int64_t>{4, -10, 18}));
  EXPECT_EQ(amax(xi).dtype(), kInt32);
  EXPECT_EQ(amax(xi).item<int64_t>(), 6);
  EXPECT_EQ(amin(xi, {1}).to_vector<int64_t>(), (std::vector<int64_t>{-2, 4}));
}

TEST(Reduce, MeanOfIntegersIsAnError) {
  Tensor xi = from_vector(std::vector<int64_t>{1, 2, 3});
  EXPECT_ANVIL_ERROR(mean(xi), "mean");
  EXPECT_ANVIL_ERROR(var(xi), "var");
  EXPECT_ANVIL_ERROR(std(xi), "std");
  EXPECT_ANVIL_ERROR(norm(xi), "norm");
}

TEST(Reduce, AmaxAminMatchNaive) {
  Tensor x = randn({2, 3, 4}, f64());
  for (const auto& c : kDimsCases) {
    Tensor hi = amax(x, c.dims, c.keepdim), lo = amin(x, c.dims, c.keepdim);
    EXPECT_EQ(hi.shape(), c.expected_shape);
    expect_near_all(hi.to_vector<double>(), naive_reduce(x, c.dims, vmax), 0);
    expect_near_all(lo.to_vector<double>(), naive_reduce(x, c.dims, vmin), 0);
  }
}

TEST(Reduce, VarStdMatchNaiveWithCorrection) {
  Tensor x = randn({3, 5}, f64());
  for (int64_t correction : {0, 1}) {
    for (std::vector<int64_t> dims : {std::vector<int64_t>{}, {0}, {-1}}) {
      auto want_var = naive_reduce(x, dims, [&](const Values& v) { return vvar(v, correction); });
      auto want_std = want_var;
      for (double& v : want_std) v = std::sqrt(v);
      expect_near_all(var(x, dims, correction).to_vector<double>(), want_var, 1e-12);
      expect_near_all(std(x, dims, correction).to_vector<double>(), want_std, 1e-12);
    }
  }
  EXPECT_EQ(var(x, {1}, 1, true).shape(), (Shape{3, 1}));
}

TEST(Reduce, NormMatchesNaiveForSeveralP) {
  Tensor x = randn({3, 4}, f64());
  for (double p : {1.0, 2.0, 3.0, 0.5, double(INFINITY)}) {
    SCOPED_TRACE(p);
    expect_near_all(norm(x, p).to_vector<double>(), naive_reduce(x, {}, [p](const Values& v) { return vnorm(v, p); }),
                    1e-10);
    expect_near_all(norm(x, p, {1}).to_vector<double>(),
                    naive_reduce(x, {1}, [p](const Values& v) { return vnorm(v, p); }), 1e-10);
  }
  Tensor z = tensor({0.0, 1.5, 0.0, -2.0}, kFloat64);
  EXPECT_DOUBLE_EQ(norm(z, 0.0).item<double>(), 2.0);
}

TEST(Reduce, EmptyInputs) {
  Tensor e = zeros({0, 3}, f64());
  EXPECT_EQ(sum(e).item<double>(), 0.0);
  expect_near_all(sum(e, {0}).to_vector<double>(), {0, 0, 0}, 0);
  expect_near_all(prod(e, {0}).to_vector<double>(), {1, 1, 1}, 0);
  EXPECT_TRUE(std::isnan(mean(e).item<double>()));
  EXPECT_EQ(sum(e, {1}).shape(), (Shape{0}));
  EXPECT_EQ(amax(e, {1}).shape(), (Shape{0}));  // reducing a non-empty dim is fine
  EXPECT_ANVIL_ERROR(amax(e), "amax");
  EXPECT_ANVIL_ERROR(amin(e, {0}), "amin");
  EXPECT_ANVIL_ERROR(argmax(e), "argmax");
  EXPECT_ANVIL_ERROR(max(e, 0), "max");
}

TEST(Reduce, ZeroDimInput) {
  Tensor s = scalar_tensor(2.5, f64());
  EXPECT_EQ(sum(s).item<double>(), 2.5);
  EXPECT_EQ(sum(s, {0}).shape(), Shape{});
  EXPECT_EQ(amax(s, {-1}).item<double>(), 2.5);
  auto [v, i] = max(s, 0);
  EXPECT_EQ(v.item<double>(), 2.5);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_EQ(softmax(s, 0).item<double>(), 1.0);
}

TEST(Reduce, BadDimsAreErrors) {
  Tensor x = randn({2, 3});
  EXPECT_ANVIL_ERROR(sum(x, {2}), "sum");
  EXPECT_ANVIL_ERROR(sum(x, {-3}), "out of range");
  EXPECT_ANVIL_ERROR(mean(x, {1, -1}), "more than once");
  EXPECT_ANVIL_ERROR(argmax(x, 5), "argmax");
  EXPECT_ANVIL_ERROR(softmax(x, 2), "softmax");
  EXPECT_ANVIL_ERROR(sum(Tensor()), "sum");
}

TEST(Reduce, MaxMinAlongDimGiveValuesAndFirstIndices) {
  // Small integers make ties likely; the first occurrence must win.
  Tensor x = randint(0, 4, {5, 7}).to(kFloat64);
  for (int64_t dim : {0, 1, -1}) {
    for (bool keepdim : {false, true}) {
      auto [vmx, imx] = max(x, dim, keepdim);
      auto [vmn, imn] = min(x, dim, keepdim);
      EXPECT_EQ(imx.dtype(), kInt64);
      Shape expected = x.shape();
      int64_t d = dim < 0 ? dim + 2 : dim;
      if (keepdim)
        expected[d] = 1;
      else
        expected.erase(expected.begin() + d);
      EXPECT_EQ(vmx.shape(), expected);
      EXPECT_EQ(imn.shape(), expected);
      auto sl = slices(x, {d});
      auto vx = vmx.to_vector<double>(), vn = vmn.to_vector<double>();
      auto ix = imx.to_vector<int64_t>(), in = imn.to_vector<int64_t>();
      auto ax = argmax(x, dim, keepdim).to_vector<int64_t>(), an = argmin(x, dim, keepdim).to_vector<int64_t>();
      for (size_t k = 0; k < sl.size(); ++k) {
        auto first_max = std::max_element(sl[k].begin(), sl[k].end()) - sl[k].begin();
        auto first_min = std::min_element(sl[k].begin(), sl[k].end()) - sl[k].begin();
        EXPECT_EQ(vx[k], vmax(sl[k]));
        EXPECT_EQ(vn[k], vmin(sl[k]));
        EXPECT_EQ(ix[k], first_max);
        EXPECT_EQ(in[k], first_min);
        EXPECT_EQ(ax[k], first_max);
        EXPECT_EQ(an[k], first_min);
      }
    }
  }
}

TEST(Reduce, FlatArgmaxArgmin) {
  Tensor x = randn({3, 4}, f64());
  auto v = x.to_vector<double>();
  Tensor am = argmax(x), an = argmin(x.t());
  EXPECT_EQ(am.dim(), 0);
  EXPECT_EQ(am.item<int64_t>(), std::max_element(v.begin(), v.end()) - v.begin());
  auto vt = x.t().contiguous().to_vector<double>();
  EXPECT_EQ(an.item<int64_t>(), std::min_element(vt.begin(), vt.end()) - vt.begin());
}

TEST(Reduce, SoftmaxAndLogSoftmaxMatchNaive) {
  Tensor x = randn({3, 4, 5}, f64()) * 3.0;
  for (int64_t dim : {0, 1, 2, -1}) {
    int64_t d = dim < 0 ? dim + 3 : dim;
    auto v = x.to_vector<double>();
    auto lse = naive_reduce(x, {d}, [](const Values& s) {
      double m = vmax(s), t = 0;
      for (double e : s) t += std::exp(e - m);
      return m + std::log(t);
    });
    Shape keep = x.shape();
    keep[d] = 1;
    Values want_sm(v.size()), want_lsm(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      auto idx = testing::unravel(static_cast<int64_t>(i), x.shape());
      idx[d] = 0;
      double l = lse[testing::ravel(idx, keep)];
      want_lsm[i] = v[i] - l;
      want_sm[i] = std::exp(v[i] - l);
    }
    expect_near_all(softmax(x, dim).to_vector<double>(), want_sm, 1e-12);
    expect_near_all(log_softmax(x, dim).to_vector<double>(), want_lsm, 1e-12);
  }
  Tensor big = tensor({1000.0, 1001.0, 999.0});  // stability: no overflow
  auto sm = softmax(big, 0).to_vector<double>();
  EXPECT_NEAR(sm[1], 1.0 / (1.0 + std::exp(-1.0) + std::exp(-2.0)), 1e-6);
}

TEST(Reduce, SoftmaxOfIntegersIsAnError) {
  Tensor xi = from_vector(std::vector<int64_t>{1, 2, 3});
  EXPECT_ANVIL_ERROR(softmax(xi, 0), "softmax");
  EXPECT_ANVIL_ERROR(log_softmax(xi, 0), "log_softmax");
}

// --- gradients ---

TEST(ReduceGrad, SumMeanForEveryDimsCase) {
  for (const auto& c : kDimsCases) {
    SCOPED_TRACE(::testing::PrintToString(c.dims));
    auto dims = c.dims;
    bool k = c.keepdim;
    EXPECT_TRUE(
        gradcheck([=](const std::vector<Tensor>& in) { return sum(in[0], dims, k); }, {randn({2, 3, 4}, f64())}));
    EXPECT_TRUE(
        gradcheck([=](const std::vector<Tensor>& in) { return mean(in[0], dims, k); }, {randn({2, 3, 4}, f64())}));
  }
}

TEST(ReduceGrad, NonContiguousAndBroadcastInputs) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor xt = in[0].transpose(0, 1);  // [4, 3]
    Tensor xb = in[1].expand({4, 3});  // broadcast row
    return var(xt * xb, {0}) + amax(xt.slice(0, 0, 4, 2), {0}) + prod(xt + xb, {-1}).sum();
  };
  EXPECT_TRUE(gradcheck(fn, {randn({3, 4}, f64()), randn({1, 3}, f64())}));
}

TEST(ReduceGrad, AmaxAmin) {
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return amax(in[0], {1}); }, {randn({3, 5}, f64())}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return amin(in[0], {0, -1}, true);
      },
      {randn({3, 2, 5}, f64())}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return amax(in[0]); }, {randn({4, 2}, f64())}));
}

TEST(ReduceGrad, AmaxTiesShareTheGradient) {
  Tensor x = tensor({1.0, 3.0, 3.0, 2.0, 3.0}, kFloat64).requires_grad_();
  amax(x).backward();
  expect_near_all(x.grad().to_vector<double>(), {0, 1.0 / 3, 1.0 / 3, 0, 1.0 / 3}, 1e-15);
  Tensor y = tensor({2.0, 2.0, 5.0}, kFloat64).requires_grad_();
  amin(y).backward();
  expect_near_all(y.grad().to_vector<double>(), {0.5, 0.5, 0}, 1e-15);
}

TEST(ReduceGrad, ProdIncludingZeros) {
  auto fn = [](const std::vector<Tensor>& in) { return prod(in[0], {1}); };
  EXPECT_TRUE(gradcheck(fn, {randn({3, 4}, f64())}));
  // Row 0: one zero (only it gets a gradient); row 1: two zeros (none); row 2: no zero.
  Tensor x = from_vector(std::vector<double>{2, 0, 3, 4, 0, 5, 0, 1, 1.5, 2, -1, 3}, {3, 4});
  EXPECT_TRUE(gradcheck(fn, {x}));
  Tensor leaf = x.clone().requires_grad_();
  prod(leaf, {1}).sum().backward();
  expect_near_all(leaf.grad().to_vector<double>(), {0, 24, 0, 0, 0, 0, 0, 0, -6, -4.5, 9, -3}, 1e-12);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return prod(in[0]); }, {x.slice(0, 0, 1)}));
}

TEST(ReduceGrad, VarStd) {
  for (int64_t correction : {0, 1}) {
    EXPECT_TRUE(
        gradcheck([=](const std::vector<Tensor>& in) { return var(in[0], {1}, correction); }, {randn({3, 5}, f64())}));
    EXPECT_TRUE(gradcheck(
        [=](const std::vector<Tensor>& in) {
          return std(in[0], {0, 2}, correction, true);
        },
        {randn({3, 2, 4}, f64())}));
    EXPECT_TRUE(
        gradcheck([=](const std::vector<Tensor>& in) { return std(in[0], {}, correction); }, {randn({6}, f64())}));
  }
}

TEST(ReduceGrad, StdOfConstantSliceHasZeroGradient) {
  Tensor x = from_vector(std::vector<double>{1, 1, 1, 1, 2, 4}, {2, 3}).requires_grad_();
  std(x, {1}).sum().backward();
  auto g = x.grad().to_vector<double>();
  for (int k = 0; k < 3; ++k) EXPECT_EQ(g[k], 0.0);
  for (int k = 3; k < 6; ++k) EXPECT_TRUE(std::isfinite(g[k]));
}

TEST(ReduceGrad, Norm) {
  for (double p : {1.0, 2.0, 3.0, 1.5, double(INFINITY)}) {
    SCOPED_TRACE(p);
    EXPECT_TRUE(gradcheck([=](const std::vector<Tensor>& in) { return norm(in[0], p, {1}); }, {randn({3, 4}, f64())}));
    EXPECT_TRUE(gradcheck([=](const std::vector<Tensor>& in) { return norm(in[0], p); }, {randn({5}, f64())}));
  }
  Tensor zero = zeros({3}, f64()).requires_grad_();
  norm(zero).backward();
  expect_near_all(zero.grad().to_vector<double>(), {0, 0, 0}, 0);
}

TEST(ReduceGrad, MaxMinAlongDimScatterToTheIndex) {
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return max(in[0], 1).first; }, {randn({3, 5}, f64())}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return min(in[0], -3, true).first; }, {randn({3, 2, 4}, f64())}));
  // With ties, all the gradient goes to the reported index.
  Tensor x = tensor({4.0, 1.0, 4.0}, kFloat64).requires_grad_();
  max(x, 0).first.backward();
  expect_near_all(x.grad().to_vector<double>(), {1, 0, 0}, 0);
}

TEST(ReduceGrad, SoftmaxLogSoftmax) {
  for (int64_t dim : {0, 1, -1}) {
    EXPECT_TRUE(gradcheck([=](const std::vector<Tensor>& in) { return softmax(in[0], dim); }, {randn({3, 4}, f64())}));
    EXPECT_TRUE(
        gradcheck([=](const std::vector<Tensor>& in) { return log_softmax(in[0], dim); }, {randn({3, 4}, f64())}));
  }
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return softmax(in[0].t(), 0); }, {randn({3, 4}, f64())}));
}

TEST(ReduceGrad, SecondOrder) {
  using testing::TensorFn;
  std::vector<TensorFn> fns = {
      [](const std::vector<Tensor>& in) { return softmax(in[0], 1); },
      [](const std::vector<Tensor>& in) { return log_softmax(in[0], 0); },
      [](const std::vector<Tensor>& in) { return var(in[0], {1}); },
      [](const std::vector<Tensor>& in) { return std(in[0], {0}); },
      [](const std::vector<Tensor>& in) { return norm(in[0], 2.0, {1}); },
      [](const std::vector<Tensor>& in) { return norm(in[0], 3.0); },
      [](const std::vector<Tensor>& in) { return prod(in[0], {1}); },
      [](const std::vector<Tensor>& in) { return mean(in[0] * in[0], {0}); },
      [](const std::vector<Tensor>& in) { return amax(in[0] * in[0], {1}); },
      [](const std::vector<Tensor>& in) { return max(in[0] * in[0], 0).first; },
  };
  for (size_t i = 0; i < fns.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(gradgradcheck(fns[i], {randn({3, 4}, f64())}));
  }
}

TEST(ReduceGrad, SoftmaxFusedBackwardMatchesComposed) {
  Tensor x = randn({4, 6}, f64()).requires_grad_();
  Tensor w = randn({4, 6}, f64());
  Tensor g_fused = autograd::grad({(softmax(x, 1) * w).sum()}, {x})[0];
  Tensor g_composed = autograd::grad({(softmax(x, 1) * w).sum()}, {x}, {}, {false, true})[0];
  EXPECT_LT(testing::max_abs_diff(g_fused, g_composed), 1e-12);
  Tensor l_fused = autograd::grad({(log_softmax(x, 0) * w).sum()}, {x})[0];
  Tensor l_composed = autograd::grad({(log_softmax(x, 0) * w).sum()}, {x}, {}, {false, true})[0];
  EXPECT_LT(testing::max_abs_diff(l_fused, l_composed), 1e-12);
}

}  // namespace
}  // namespace anvil
