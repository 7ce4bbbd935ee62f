// conv2d, max_pool2d, avg_pool2d: forward against direct loops, gradients
// against finite differences (float64), bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/core/ops/nn_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::first_grad;
using testing::gradcheck;
using testing::randn64;

// Direct convolution: out[n, co, oh, ow] = b[co] + sum over the group's
// input channels and kernel taps of x * w.
std::vector<double> naive_conv2d(const Tensor& xt, const Tensor& wt, const Tensor& bt, const Conv2dOptions& o,
                                 Shape& out_shape) {
  auto x = xt.to_vector<double>(), w = wt.to_vector<double>();
  std::vector<double> b = bt.defined() ? bt.to_vector<double>() : std::vector<double>();
  const int64_t N = xt.size(0), C = xt.size(1), H = xt.size(2), W = xt.size(3);
  const int64_t CO = wt.size(0), CG = wt.size(1), KH = wt.size(2), KW = wt.size(3), G = o.groups;
  const int64_t HO = (H + 2 * o.padding[0] - o.dilation[0] * (KH - 1) - 1) / o.stride[0] + 1;
  const int64_t WO = (W + 2 * o.padding[1] - o.dilation[1] * (KW - 1) - 1) / o.stride[1] + 1;
  out_shape = {N, CO, HO, WO};
  std::vector<double> out(static_cast<size_t>(N * CO * HO * WO));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t co = 0; co < CO; ++co)
      for (int64_t oh = 0; oh < HO; ++oh)
        for (int64_t ow = 0; ow < WO; ++ow) {
          const int64_t g = co / (CO / G);
          double acc = b.empty() ? 0.0 : b[co];
          for (int64_t ci = 0; ci < CG; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * o.stride[0] - o.padding[0] + kh * o.dilation[0];
                const int64_t iw = ow * o.stride[1] - o.padding[1] + kw * o.dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += x[((n * C + g * CG + ci) * H + ih) * W + iw] * w[((co * CG + ci) * KH + kh) * KW + kw];
              }
          out[((n * CO + co) * HO + oh) * WO + ow] = acc;
        }
  (void)C;
  return out;
}

struct ConvCase {
  Shape x, w;
  Conv2dOptions o;
  bool bias;
};

std::vector<ConvCase> conv_cases() {
  Conv2dOptions plain;
  Conv2dOptions strided;
  strided.stride = {2, 1};
  strided.padding = {1, 2};
  Conv2dOptions dilated;
  dilated.dilation = {2, 1};
  dilated.padding = {2, 0};
  dilated.stride = {1, 2};
  Conv2dOptions grouped;
  grouped.groups = 2;
  grouped.padding = {1, 1};
  Conv2dOptions depthwise;
  depthwise.groups = 3;
  depthwise.stride = {2, 2};
  depthwise.padding = {1, 1};
  return {
      {{2, 3, 5, 6}, {4, 3, 3, 3}, plain, true},      {{2, 3, 7, 6}, {2, 3, 3, 2}, strided, true},
      {{1, 2, 7, 7}, {3, 2, 3, 3}, dilated, false},   {{2, 4, 5, 5}, {6, 2, 3, 3}, grouped, true},
      {{1, 3, 6, 5}, {3, 1, 3, 3}, depthwise, false}, {{2, 3, 4, 4}, {5, 3, 1, 1}, plain, true},  // pointwise
  };
}

TEST(NnConv2d, ForwardMatchesDirectLoops) {
  manual_seed(1);
  for (const auto& c : conv_cases()) {
    for (DType dt : {kFloat64, kFloat32}) {
      Tensor x = randn(c.x, dt), w = randn(c.w, dt), b = c.bias ? randn({c.w[0]}, dt) : Tensor();
      Shape want_shape;
      auto want = naive_conv2d(x, w, b, c.o, want_shape);
      Tensor y = conv2d(x, w, b, c.o);
      EXPECT_EQ(y.shape(), want_shape);
      EXPECT_EQ(y.dtype(), dt);
      expect_near_vec(y.to_vector<double>(), want, dt == kFloat64 ? 1e-10 : 1e-4, "conv " + x.shape_str());
    }
  }
}

TEST(NnConv2d, UnbatchedAndNonContiguousInput) {
  manual_seed(2);
  Tensor x = randn64({3, 5, 6}), w = randn64({2, 3, 3, 3}), b = randn64({2});
  Tensor y = conv2d(x, w, b);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
  Shape s;
  expect_near_vec(y.to_vector<double>(), naive_conv2d(x.unsqueeze(0), w, b, {}, s), 1e-10);
  // A transposed (non-contiguous) input gives the same as its contiguous copy.
  Tensor xt = randn64({2, 3, 6, 5}).transpose(2, 3);
  ASSERT_FALSE(xt.is_contiguous());
  expect_near_vec(conv2d(xt, w, b).to_vector<double>(), conv2d(xt.contiguous(), w, b).to_vector<double>(), 1e-12);
}

TEST(NnConv2d, Gradcheck) {
  manual_seed(3);
  for (const auto& c : conv_cases()) {
    std::vector<Tensor> in{randn64(c.x), randn64(c.w)};
    if (c.bias) in.push_back(randn64({c.w[0]}));
    auto o = c.o;
    EXPECT_TRUE(gradcheck(
        [o](const std::vector<Tensor>& t) { return conv2d(t[0], t[1], t.size() > 2 ? t[2] : Tensor(), o); }, in))
        << "conv x " << testing::str(c.x) << " w " << testing::str(c.w);
  }
}

TEST(NnConv2d, DoubleBackward) {
  manual_seed(4);
  Conv2dOptions o;
  o.stride = {2, 1};
  o.padding = {1, 1};
  o.groups = 2;
  auto f = [o](const std::vector<Tensor>& t) { return conv2d(t[0], t[1], t[2], o); };
  std::vector<Tensor> in{randn64({2, 4, 5, 4}), randn64({2, 2, 3, 2}), randn64({2})};
  Tensor wy = randn64(f(in).shape());
  for (size_t which : {0u, 1u}) {
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return first_grad(f, t, which, wy); }, in))
        << "d/d(input " << which << ")";
  }
}

// --- pooling ---

std::vector<double> naive_pool(const Tensor& xt, bool is_max, const Pool2dOptions& o, Shape& out_shape) {
  auto x = xt.to_vector<double>();
  const int64_t H = xt.size(-2), W = xt.size(-1), planes = xt.numel() / (H * W);
  const int64_t kh = o.kernel[0], kw = o.kernel[1], ph = o.padding[0], pw = o.padding[1];
  const int64_t sh = o.stride[0] ? o.stride[0] : kh, sw = o.stride[1] ? o.stride[1] : kw;
  const int64_t HO = (H + 2 * ph - kh) / sh + 1, WO = (W + 2 * pw - kw) / sw + 1;
  out_shape = xt.shape();
  out_shape[out_shape.size() - 2] = HO;
  out_shape.back() = WO;
  std::vector<double> out;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t oh = 0; oh < HO; ++oh)
      for (int64_t ow = 0; ow < WO; ++ow) {
        const int64_t h0 = oh * sh - ph, w0 = ow * sw - pw;
        // PyTorch's divisor with count_include_pad: the window clipped to the padded input.
        const int64_t padded = (std::min(h0 + kh, H + ph) - h0) * (std::min(w0 + kw, W + pw) - w0);
        double best = -std::numeric_limits<double>::infinity(), total = 0;
        int64_t count = 0;
        for (int64_t ih = std::max<int64_t>(h0, 0); ih < std::min(h0 + kh, H); ++ih)
          for (int64_t iw = std::max<int64_t>(w0, 0); iw < std::min(w0 + kw, W); ++iw) {
            const double v = x[(p * H + ih) * W + iw];
            best = std::max(best, v);
            total += v;
            ++count;
          }
        out.push_back(is_max ? best : total / static_cast<double>(o.count_include_pad ? padded : count));
      }
  return out;
}

std::vector<std::pair<Shape, Pool2dOptions>> pool_cases() {
  Pool2dOptions k2;  // kernel 2, stride = kernel
  Pool2dOptions k3s2p1;
  k3s2p1.kernel = {3, 3};
  k3s2p1.stride = {2, 2};
  k3s2p1.padding = {1, 1};
  Pool2dOptions rect = k3s2p1;
  rect.kernel = {2, 3};
  rect.stride = {1, 2};
  rect.padding = {1, 1};
  Pool2dOptions exclude_pad = k3s2p1;
  exclude_pad.count_include_pad = false;
  return {{{2, 3, 4, 6}, k2}, {{1, 2, 7, 5}, k3s2p1}, {{2, 6, 5}, rect}, {{1, 2, 5, 6}, exclude_pad}};
}

TEST(NnPool2d, ForwardMatchesDirectLoops) {
  manual_seed(5);
  for (const auto& [shape, o] : pool_cases()) {
    for (DType dt : {kFloat64, kFloat32}) {
      Tensor x = randn(shape, dt);
      Shape want_shape;
      auto want_max = naive_pool(x, true, o, want_shape);
      Tensor ym = max_pool2d(x, o);
      EXPECT_EQ(ym.shape(), want_shape);
      expect_near_vec(ym.to_vector<double>(), want_max, dt == kFloat64 ? 1e-12 : 1e-6, "max " + x.shape_str());
      auto want_avg = naive_pool(x, false, o, want_shape);
      Tensor ya = avg_pool2d(x, o);
      EXPECT_EQ(ya.shape(), want_shape);
      expect_near_vec(ya.to_vector<double>(), want_avg, dt == kFloat64 ? 1e-12 : 1e-5, "avg " + x.shape_str());
    }
  }
}

TEST(NnPool2d, Gradcheck) {
  manual_seed(6);
  for (const auto& [shape, o] : pool_cases()) {
    auto opts = o;
    EXPECT_TRUE(gradcheck([opts](const std::vector<Tensor>& t) { return max_pool2d(t[0], opts); }, {randn64(shape)}))
        << "max_pool2d " << testing::str(shape);
    EXPECT_TRUE(gradcheck([opts](const std::vector<Tensor>& t) { return avg_pool2d(t[0], opts); }, {randn64(shape)}))
        << "avg_pool2d " << testing::str(shape);
  }
}

TEST(NnPool2d, MaxPoolGradientGoesToTheMaximum) {
  Tensor x = from_vector<double>({1, 5, 2, 0, 3, 4, 8, 7, 6}, {1, 1, 3, 3}).requires_grad_();
  Pool2dOptions o;
  o.stride = {1, 1};
  max_pool2d(x, o).sum().backward();
  // Window maxima: 5 (top-left), 5 (top-right), 8 (bottom-left), 7 (bottom-right).
  expect_near_vec(x.grad().to_vector<double>(), {0, 2, 0, 0, 0, 0, 1, 1, 0}, 0);
}

TEST(NnPool2d, DoubleBackward) {
  manual_seed(7);
  Pool2dOptions o;
  o.kernel = {3, 3};
  o.stride = {2, 2};
  o.padding = {1, 1};
  auto avg = [o](const std::vector<Tensor>& t) { return avg_pool2d(t[0] * t[0], o); };
  std::vector<Tensor> in{randn64({1, 2, 5, 5})};
  Tensor wy = randn64(avg(in).shape());
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return first_grad(avg, t, 0, wy); }, in));
  // Max pooling has no double backward: a clear error, not a wrong gradient.
  auto mx = [o](const std::vector<Tensor>& t) { return max_pool2d(t[0], o); };
  expect_error([&] { first_grad(mx, {in[0].clone().requires_grad_()}, 0, wy); }, {"max_pool2d", "double backward"});
}

// --- bad input ---

TEST(NnConv2d, RejectsBadArguments) {
  Tensor x = randn({2, 4, 6, 6}), w = randn({6, 2, 3, 3});
  Conv2dOptions g2;
  g2.groups = 2;
  expect_error([&] { conv2d(randn({4, 6}), w, {}, g2); }, {"conv2d", "[N, C, H, W]", "[4, 6]"});
  expect_error([&] { conv2d(x, randn({6, 2, 3}), {}, g2); }, {"conv2d", "weight", "[6, 2, 3]"});
  expect_error([&] { conv2d(x, w); }, {"conv2d", "4 channels", "groups=1"});  // Cin 4 vs 2*1
  Conv2dOptions g4;
  g4.groups = 4;
  expect_error([&] { conv2d(x, randn({6, 1, 3, 3}), {}, g4); }, {"conv2d", "not divisible by groups=4"});
  expect_error([&] { conv2d(x, w, randn({5}), g2); }, {"conv2d", "bias", "[6]"});
  expect_error([&] { conv2d(x, w.to(kFloat64), {}, g2); }, {"conv2d", "same dtype", "float64"});
  expect_error([&] { conv2d(x.to(kInt64), w, {}, g2); }, {"conv2d", "floating", "int64"});
  expect_error([&] { conv2d(randn({1, 4, 2, 2}), w, {}, g2); }, {"conv2d", "smaller than the dilated kernel"});
  Conv2dOptions bad_stride = g2;
  bad_stride.stride = {0, 1};
  expect_error([&] { conv2d(x, w, {}, bad_stride); }, {"conv2d", "stride"});
}

TEST(NnPool2d, RejectsBadArguments) {
  Tensor x = randn({1, 2, 4, 4});
  Pool2dOptions zero_kernel;
  zero_kernel.kernel = {0, 2};
  expect_error([&] { max_pool2d(x, zero_kernel); }, {"max_pool2d", "kernel"});
  Pool2dOptions big_pad;
  big_pad.padding = {2, 0};
  expect_error([&] { avg_pool2d(x, big_pad); }, {"avg_pool2d", "padding"});
  expect_error([&] { max_pool2d(randn({4, 4}), {}); }, {"max_pool2d", "[N, C, H, W]"});
  Pool2dOptions k5;
  k5.kernel = {5, 5};
  expect_error([&] { avg_pool2d(x, k5); }, {"avg_pool2d", "smaller than the kernel"});
  expect_error([&] { max_pool2d(x.to(kInt32), {}); }, {"max_pool2d", "floating"});
}

// An empty plane with padding: each window would hold only padding, and the
// kernels would read a plane with no elements (past the buffer). Refused on
// every backend, as PyTorch does, naming the shapes.
TEST(NnPool2d, EmptyPlaneWithPaddingIsRefused) {
  Pool2dOptions o;
  o.kernel = {2, 2};
  o.stride = {1, 1};
  o.padding = {1, 1};
  for (const Shape& shape : {Shape{1, 2, 0, 3}, Shape{1, 2, 3, 0}}) {
    const Tensor x = randn(shape);
    expect_error([&] { max_pool2d(x, o); }, {"pool2d", "[1, 2, ", "zero height or width", "only padding"});
    expect_error([&] { avg_pool2d(x, o); }, {"pool2d", "zero height or width", "only padding"});
  }
  // A batch of zero images is fine: there is nothing to pool.
  EXPECT_EQ(max_pool2d(randn({0, 2, 4, 4}), o).shape(), (Shape{0, 2, 5, 5}));
}

}  // namespace
}  // namespace anvil
