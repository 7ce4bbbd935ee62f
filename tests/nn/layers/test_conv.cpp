// nn::Conv2d: forward against a naive loop (stride, padding, dilation,
// groups), default init, gradients, bad options.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/layers/conv.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::module_gradcheck;

std::vector<double> naive_conv(const Tensor& xt, const nn::Conv2d& conv) {
  const auto& o = conv.options;
  auto x = xt.to_vector<double>(), w = conv.weight.to_vector<double>();
  auto b = conv.bias.defined() ? conv.bias.to_vector<double>() : std::vector<double>(o.out_channels, 0.0);
  const int64_t N = xt.size(0), C = xt.size(1), H = xt.size(2), W = xt.size(3);
  const int64_t KH = o.kernel_size.h, KW = o.kernel_size.w;
  const int64_t OH = (H + 2 * o.padding.h - o.dilation.h * (KH - 1) - 1) / o.stride.h + 1;
  const int64_t OW = (W + 2 * o.padding.w - o.dilation.w * (KW - 1) - 1) / o.stride.w + 1;
  const int64_t cin_g = C / o.groups, cout_g = o.out_channels / o.groups;
  std::vector<double> y(N * o.out_channels * OH * OW);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t co = 0; co < o.out_channels; ++co)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = b[co];
          const int64_t g = co / cout_g;
          for (int64_t ci = 0; ci < cin_g; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * o.stride.h - o.padding.h + kh * o.dilation.h;
                const int64_t iw = ow * o.stride.w - o.padding.w + kw * o.dilation.w;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += x[((n * C + g * cin_g + ci) * H + ih) * W + iw] * w[((co * cin_g + ci) * KH + kh) * KW + kw];
              }
          y[((n * o.out_channels + co) * OH + oh) * OW + ow] = s;
        }
  return y;
}

TEST(NnConv2d, ForwardMatchesNaiveLoop) {
  manual_seed(10);
  const nn::Conv2dOptions cases[] = {
      {.in_channels = 3, .out_channels = 4, .kernel_size = 3},
      {.in_channels = 3, .out_channels = 4, .kernel_size = {3, 2}, .stride = 2, .padding = 1},
      {.in_channels = 4,
       .out_channels = 6,
       .kernel_size = 3,
       .stride = {1, 2},
       .padding = {2, 1},
       .dilation = 2,
       .groups = 2},
      {.in_channels = 2, .out_channels = 2, .kernel_size = 1, .bias = false},
  };
  for (const auto& o : cases) {
    nn::Conv2d conv(o);
    Tensor x = randn({2, o.in_channels, 7, 6});
    Tensor y = conv(x);
    expect_near_vec(y.to_vector<double>(), naive_conv(x, conv), 1e-4, conv.extra_repr());
  }
}

TEST(NnConv2d, UnbatchedInput) {
  manual_seed(11);
  nn::Conv2d conv(2, 3, 3);
  Tensor x = randn({2, 5, 5});
  Tensor y = conv(x);
  EXPECT_EQ(y.shape(), (Shape{3, 3, 3}));
  expect_near_vec(y.to_vector<double>(), naive_conv(x.unsqueeze(0), conv), 1e-4);
}

TEST(NnConv2d, ShapesAndDefaultInit) {
  manual_seed(12);
  nn::Conv2d conv({.in_channels = 8, .out_channels = 16, .kernel_size = 3, .groups = 2});
  EXPECT_EQ(conv.weight.shape(), (Shape{16, 4, 3, 3}));
  EXPECT_EQ(conv.bias.shape(), (Shape{16}));
  const double bound = 1.0 / std::sqrt(4.0 * 9.0);  // fan_in = in/groups * kh * kw
  for (double v : conv.weight.to_vector<double>()) EXPECT_LE(std::abs(v), bound);
  for (double v : conv.bias.to_vector<double>()) EXPECT_LE(std::abs(v), bound);
  auto [mean, sd] = testing::mean_std(conv.weight);
  EXPECT_NEAR(sd, bound / std::sqrt(3.0), 0.1 * bound);
  EXPECT_EQ(conv.extra_repr(), "8, 16, kernel_size=(3, 3), stride=(1, 1), groups=2");
}

TEST(NnConv2d, GradientsMatchFiniteDifferences) {
  manual_seed(13);
  nn::Conv2d conv({.in_channels = 2, .out_channels = 2, .kernel_size = 2, .stride = 1, .padding = 1});
  conv.to(kFloat64);
  EXPECT_TRUE(module_gradcheck(conv, randn({1, 2, 3, 3}, kFloat64)));
}

TEST(NnConv2d, BadOptionsAndInputs) {
  expect_error([] { nn::Conv2d({.in_channels = 3, .out_channels = 4, .kernel_size = 3, .groups = 2}); },
               {"Conv2d", "divisible by groups"});
  expect_error([] { nn::Conv2d({.in_channels = 3, .out_channels = 4, .kernel_size = 0}); }, {"Conv2d", "kernel_size"});
  nn::Conv2d conv(3, 4, 3);
  expect_error([&] { conv(randn({1, 2, 5, 5})); }, {"Conv2d", "[N, 3, H, W]", "[1, 2, 5, 5]"});
}

}  // namespace
}  // namespace anvil
