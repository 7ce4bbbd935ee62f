// conv1d, conv_transpose2d, the 1-D pools, ceil_mode and adaptive max
// pooling against direct loops over host values, their gradients against
// finite differences, and the arguments they refuse.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/core/ops/nn_test_util.h"
#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::gradcheck;
using testing::randn64;

struct ConvT {
  int64_t s[2], p[2], op[2], d[2], groups;
};

// Scatter form of the transposed convolution: every input element adds
// x * w into the outputs its kernel reaches.
std::vector<double> naive_conv_transpose2d(const Tensor& x, const Tensor& w, const ConvT& c, Shape& out_shape) {
  const int64_t n = x.size(0), cin = x.size(1), h = x.size(2), wd = x.size(3);
  const int64_t coutg = w.size(1), kh = w.size(2), kw = w.size(3), cout = coutg * c.groups, cing = cin / c.groups;
  const int64_t oh = (h - 1) * c.s[0] - 2 * c.p[0] + c.d[0] * (kh - 1) + c.op[0] + 1;
  const int64_t ow = (wd - 1) * c.s[1] - 2 * c.p[1] + c.d[1] * (kw - 1) + c.op[1] + 1;
  out_shape = {n, cout, oh, ow};
  std::vector<double> out(static_cast<size_t>(n * cout * oh * ow), 0.0);
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < cin; ++ci)
      for (int64_t co = 0; co < coutg; ++co)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < wd; ++j)
            for (int64_t a = 0; a < kh; ++a)
              for (int64_t e = 0; e < kw; ++e) {
                const int64_t y = i * c.s[0] - c.p[0] + a * c.d[0], z = j * c.s[1] - c.p[1] + e * c.d[1];
                if (y < 0 || y >= oh || z < 0 || z >= ow) continue;
                const int64_t oc = (ci / cing) * coutg + co;
                out[static_cast<size_t>(((b * cout + oc) * oh + y) * ow + z)] +=
                    xv[static_cast<size_t>(((b * cin + ci) * h + i) * wd + j)] *
                    wv[static_cast<size_t>(((ci * coutg + co) * kh + a) * kw + e)];
              }
  return out;
}

TEST(NnConvTranspose2d, MatchesScatterLoops) {
  manual_seed(11);
  const std::vector<ConvT> cases{{{1, 1}, {0, 0}, {0, 0}, {1, 1}, 1},
                                 {{2, 2}, {1, 0}, {1, 0}, {1, 1}, 1},
                                 {{2, 3}, {0, 1}, {1, 2}, {1, 2}, 2},
                                 {{1, 1}, {1, 1}, {1, 0}, {2, 1}, 1},
                                 {{3, 1}, {2, 0}, {0, 0}, {2, 1}, 4}};
  for (const ConvT& c : cases) {
    Tensor x = randn64({2, 4, 3, 4}), w = randn64({4, 3, 3, 2}), b = randn64({3 * c.groups});
    ConvTranspose2dOptions o;
    for (int d = 0; d < 2; ++d) {
      o.stride[d] = c.s[d];
      o.padding[d] = c.p[d];
      o.output_padding[d] = c.op[d];
      o.dilation[d] = c.d[d];
    }
    o.groups = c.groups;
    Shape want_shape;
    auto want = naive_conv_transpose2d(x, w, c, want_shape);
    Tensor y = conv_transpose2d(x, w, {}, o);
    ASSERT_EQ(y.shape(), want_shape) << "stride " << c.s[0] << "," << c.s[1] << " groups " << c.groups;
    expect_near_vec(y.to_vector<double>(), want, 1e-10);
    Tensor yb = conv_transpose2d(x, w, b, o);
    EXPECT_LT(testing::max_abs_diff(yb, y + b.view({1, -1, 1, 1})), 1e-12);
    EXPECT_EQ(conv_transpose2d(x[0], w, b, o).shape(), Shape(want_shape.begin() + 1, want_shape.end()));
  }
}

TEST(NnConvTranspose2d, IsTheAdjointOfConv2d) {
  // <conv2d(u), v> == <u, conv_transpose2d(v)> for the same weight and settings.
  manual_seed(12);
  Tensor u = randn64({2, 3, 7, 6}), w = randn64({4, 3, 3, 3});
  Conv2dOptions c;
  c.stride = {2, 2};
  c.padding = {1, 1};
  Tensor cu = conv2d(u, w, {}, c);
  Tensor v = randn64(cu.shape());
  ConvTranspose2dOptions t;
  t.stride = {2, 2};
  t.padding = {1, 1};
  t.output_padding = {0, 1};
  Tensor tv = conv_transpose2d(v, w, {}, t);
  ASSERT_EQ(tv.shape(), u.shape());
  EXPECT_NEAR((cu * v).sum().item<double>(), (u * tv).sum().item<double>(), 1e-9);
}

TEST(NnConvTranspose2d, Gradcheck) {
  manual_seed(13);
  ConvTranspose2dOptions o;
  o.stride = {2, 1};
  o.padding = {1, 0};
  o.output_padding = {1, 0};
  o.groups = 2;
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return conv_transpose2d(t[0], t[1], t[2], o); },
                        {randn64({1, 4, 2, 3}), randn64({4, 1, 2, 2}), randn64({2})}));
}

TEST(NnConvTranspose2d, RefusesBadArguments) {
  Tensor x = randn64({1, 4, 3, 3}), w = randn64({4, 2, 3, 3});
  expect_error([&] { conv_transpose2d(x, randn64({3, 2, 3, 3})); }, {"conv_transpose2d", "4 channels"});
  ConvTranspose2dOptions big_op;
  big_op.stride = {2, 2};
  big_op.output_padding = {2, 0};
  expect_error([&] { conv_transpose2d(x, w, {}, big_op); }, {"conv_transpose2d", "output_padding"});
  expect_error([&] { conv_transpose2d(x, w, randn64({3})); }, {"conv_transpose2d", "bias [2]"});
  expect_error([&] { conv_transpose2d(x, w.view({4, 2, 9})); }, {"conv_transpose2d", "weight [Cin, Cout/groups"});
}

std::vector<double> naive_conv1d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t s, int64_t p, int64_t d,
                                 int64_t groups, int64_t& out_len) {
  const int64_t n = x.size(0), cin = x.size(1), l = x.size(2), cout = w.size(0), cing = w.size(1), k = w.size(2);
  out_len = (l + 2 * p - d * (k - 1) - 1) / s + 1;
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> out;
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t co = 0; co < cout; ++co)
      for (int64_t o = 0; o < out_len; ++o) {
        double acc = bv[static_cast<size_t>(co)];
        const int64_t g = co / (cout / groups);
        for (int64_t ci = 0; ci < cing; ++ci)
          for (int64_t j = 0; j < k; ++j) {
            const int64_t pos = o * s - p + j * d;
            if (pos < 0 || pos >= l) continue;
            acc += xv[static_cast<size_t>((bi * cin + g * cing + ci) * l + pos)] *
                   wv[static_cast<size_t>((co * cing + ci) * k + j)];
          }
        out.push_back(acc);
      }
  return out;
}

TEST(NnConv1d, MatchesLoopsAndGradcheck) {
  manual_seed(14);
  Tensor x = randn64({2, 4, 9}), w = randn64({6, 2, 3}), b = randn64({6});
  Conv1dOptions o{2, 1, 2, 2};  // stride, padding, dilation, groups
  int64_t len = 0;
  auto want = naive_conv1d(x, w, b, 2, 1, 2, 2, len);
  Tensor y = conv1d(x, w, b, o);
  ASSERT_EQ(y.shape(), (Shape{2, 6, len}));
  expect_near_vec(y.to_vector<double>(), want, 1e-10);
  EXPECT_EQ(conv1d(x[0], w, b, o).shape(), (Shape{6, len}));
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return conv1d(t[0], t[1], t[2], o); },
                        {randn64({1, 4, 6}), randn64({6, 2, 3}), randn64({6})}));
  expect_error([&] { conv1d(x, randn64({6, 2, 3, 1})); }, {"conv1d", "weight [Cout, Cin/groups, k]"});
  expect_error([&] { conv1d(randn64({4}), w); }, {"conv1d", "[N, C, L]"});
}

// PyTorch's pooling on [N, C, H, W] with its output-size and divisor rules.
std::vector<double> naive_pool2d(const Tensor& x, bool is_max, const Pool2dOptions& o, Shape& out_shape) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  int64_t out[2];
  const int64_t in[2] = {h, w};
  int64_t s[2];
  for (int d = 0; d < 2; ++d) {
    s[d] = o.stride[d] == 0 ? o.kernel[d] : o.stride[d];
    const int64_t num = in[d] + 2 * o.padding[d] - o.kernel[d] + (o.ceil_mode ? s[d] - 1 : 0);
    out[d] = num / s[d] + 1;
    if (o.ceil_mode && (out[d] - 1) * s[d] >= in[d] + o.padding[d]) --out[d];
  }
  out_shape = {n, c, out[0], out[1]};
  const auto xv = x.to_vector<double>();
  std::vector<double> r;
  for (int64_t plane = 0; plane < n * c; ++plane)
    for (int64_t i = 0; i < out[0]; ++i)
      for (int64_t j = 0; j < out[1]; ++j) {
        int64_t h0 = i * s[0] - o.padding[0], w0 = j * s[1] - o.padding[1];
        int64_t h1 = std::min(h0 + o.kernel[0], h + o.padding[0]), w1 = std::min(w0 + o.kernel[1], w + o.padding[1]);
        const int64_t pool_size = (h1 - h0) * (w1 - w0);
        h0 = std::max<int64_t>(h0, 0);
        w0 = std::max<int64_t>(w0, 0);
        h1 = std::min(h1, h);
        w1 = std::min(w1, w);
        double acc = is_max ? -INFINITY : 0.0;
        for (int64_t y = h0; y < h1; ++y)
          for (int64_t z = w0; z < w1; ++z) {
            const double v = xv[static_cast<size_t>((plane * h + y) * w + z)];
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        if (!is_max) acc /= static_cast<double>(o.count_include_pad ? pool_size : (h1 - h0) * (w1 - w0));
        r.push_back(acc);
      }
  return r;
}

TEST(NnPool, CeilModeMatchesPyTorchRules) {
  manual_seed(15);
  Tensor x = randn64({2, 3, 8, 7});
  for (bool cip : {true, false})
    for (int64_t pad : {0, 1}) {
      Pool2dOptions o;
      o.kernel = {3, 2};
      o.stride = {2, 3};
      o.padding = {pad, pad};
      o.count_include_pad = cip;
      o.ceil_mode = true;
      Shape want_shape;
      auto want_max = naive_pool2d(x, true, o, want_shape);
      Tensor got_max = max_pool2d(x, o);
      ASSERT_EQ(got_max.shape(), want_shape) << "padding " << pad;
      expect_near_vec(got_max.to_vector<double>(), want_max, 1e-12, "max");
      auto want_avg = naive_pool2d(x, false, o, want_shape);
      Tensor got_avg = avg_pool2d(x, o);
      ASSERT_EQ(got_avg.shape(), want_shape);
      expect_near_vec(got_avg.to_vector<double>(), want_avg, 1e-12, cip ? "avg, count_include_pad" : "avg");
    }
  Pool2dOptions floor_o;
  floor_o.kernel = {3, 2};
  floor_o.stride = {2, 3};
  EXPECT_EQ(max_pool2d(x, floor_o).shape(), (Shape{2, 3, 3, 2}));
  floor_o.ceil_mode = true;
  EXPECT_EQ(max_pool2d(x, floor_o).shape(), (Shape{2, 3, 4, 3}));
  EXPECT_EQ(avg_pool2d(x, floor_o).shape(), (Shape{2, 3, 4, 3}));
}

TEST(NnPool, OneDimPoolsMatchLoops) {
  manual_seed(16);
  Tensor x = randn64({2, 3, 10});
  for (bool ceil : {false, true}) {
    Pool1dOptions o{3, 2, 1, ceil, false};
    Pool2dOptions o2;
    o2.kernel = {1, 3};
    o2.stride = {1, 2};
    o2.padding = {0, 1};
    o2.ceil_mode = ceil;
    o2.count_include_pad = false;
    Shape s;
    auto want_max = naive_pool2d(x.unsqueeze(2), true, o2, s);
    Tensor got = max_pool1d(x, o);
    ASSERT_EQ(got.shape(), (Shape{2, 3, s[3]}));
    expect_near_vec(got.to_vector<double>(), want_max, 1e-12);
    auto want_avg = naive_pool2d(x.unsqueeze(2), false, o2, s);
    expect_near_vec(avg_pool1d(x, o).to_vector<double>(), want_avg, 1e-12);
    EXPECT_EQ(max_pool1d(x[0], o).shape(), (Shape{3, s[3]}));
  }
  expect_error([&] { max_pool1d(randn64({2, 3, 4, 5}), {}); }, {"max_pool1d", "[N, C, L]"});
}

// The 1-D pools name themselves and their 1-D numbers (not the [1, k] kernel
// of the 2-D pool they run on).
TEST(NnPool, OneDimPoolsRefuseBadArguments) {
  manual_seed(17);
  const Tensor x = randn64({2, 3, 4});
  expect_error([&] { avg_pool1d(randn64({2, 3, 4, 5}), {}); }, {"avg_pool1d", "[N, C, L]", "[2, 3, 4, 5]"});
  expect_error([&] { avg_pool1d(randn64({4}), {}); }, {"avg_pool1d", "[N, C, L] or [C, L]"});
  expect_error([&] { avg_pool1d(x, {.kernel = 5}); }, {"avg_pool1d", "shorter than kernel_size 5"});
  expect_error([&] { avg_pool1d(x, {.kernel = 3, .padding = 2}); },
               {"avg_pool1d", "padding must be between 0 and half the kernel size", "padding 2"});
  expect_error([&] { avg_pool1d(x, {.kernel = 0}); }, {"avg_pool1d", "kernel_size must be positive", "kernel_size 0"});
  expect_error([&] { avg_pool1d(x, {.kernel = 2, .stride = -1}); }, {"avg_pool1d", "stride -1"});
  expect_error([&] { avg_pool1d(x.to(kInt64), {}); }, {"avg_pool1d", "int64"});
  expect_error([&] { max_pool1d(x, {.kernel = 7, .padding = 1}); }, {"max_pool1d", "shorter than kernel_size 7"});
}

TEST(NnPool, CeilModeAndOneDimGradcheck) {
  manual_seed(17);
  Pool2dOptions o;
  o.kernel = {2, 3};
  o.stride = {2, 2};
  o.padding = {1, 1};
  o.ceil_mode = true;
  o.count_include_pad = false;
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return avg_pool2d(t[0], o); }, {randn64({1, 2, 4, 6})}));
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return max_pool2d(t[0], o); }, {randn64({1, 2, 4, 6})}));
  Pool1dOptions p1{3, 2, 0, true, true};
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return avg_pool1d(t[0], p1); }, {randn64({2, 2, 6})}));
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return max_pool1d(t[0], p1); }, {randn64({2, 2, 6})}));
}

std::vector<double> naive_adaptive_max(const Tensor& x, int64_t oh, int64_t ow) {
  const int64_t planes = x.numel() / (x.size(-1) * x.size(-2)), h = x.size(-2), w = x.size(-1);
  const auto xv = x.to_vector<double>();
  std::vector<double> r;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double m = -INFINITY;
        for (int64_t y = i * h / oh; y < ((i + 1) * h + oh - 1) / oh; ++y)
          for (int64_t z = j * w / ow; z < ((j + 1) * w + ow - 1) / ow; ++z)
            m = std::max(m, xv[static_cast<size_t>((p * h + y) * w + z)]);
        r.push_back(m);
      }
  return r;
}

TEST(NnAdaptivePool, MaxMatchesLoops) {
  manual_seed(18);
  Tensor x = randn64({2, 3, 7, 6});
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{3, 2}, {7, 6}, {1, 1}, {4, 5}, {10, 3}}) {
    Tensor y = adaptive_max_pool2d(x, {oh, ow});
    ASSERT_EQ(y.shape(), (Shape{2, 3, oh, ow}));
    expect_near_vec(y.to_vector<double>(), naive_adaptive_max(x, oh, ow), 0, "adaptive_max_pool2d");
  }
  EXPECT_EQ(adaptive_max_pool2d(x[0], {2, 2}).shape(), (Shape{3, 2, 2}));
  Tensor r = randn64({2, 9});
  expect_near_vec(adaptive_max_pool1d(r, 4).to_vector<double>(), naive_adaptive_max(r.unsqueeze(1), 1, 4), 0, "1d");
  Tensor r3 = randn64({2, 3, 7});
  Tensor avg = adaptive_avg_pool1d(r3, 3);
  ASSERT_EQ(avg.shape(), (Shape{2, 3, 3}));
  EXPECT_NEAR(avg.to_vector<double>()[1],
              r3.narrow(2, 2, 3).to_vector<double>()[0] / 3 + r3.narrow(2, 3, 1).to_vector<double>()[0] / 3 +
                  r3.narrow(2, 4, 1).to_vector<double>()[0] / 3,
              1e-12);
  expect_error([&] { adaptive_max_pool2d(x, {0, 2}); }, {"adaptive_max_pool2d", "positive output_size"});
  expect_error([&] { adaptive_max_pool2d(randn64({7, 6}), {2, 2}); }, {"adaptive_max_pool2d", "[N, C, H, W]"});
}

TEST(NnAdaptivePool, Gradcheck) {
  manual_seed(19);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& t) {
        return adaptive_max_pool2d(t[0], {3, 2});
      },
      {randn64({1, 2, 5, 4})}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return adaptive_max_pool1d(t[0], 4); }, {randn64({2, 7})}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return adaptive_avg_pool1d(t[0], 4); }, {randn64({2, 7})}));
}

}  // namespace
}  // namespace anvil
