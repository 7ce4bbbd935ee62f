// nn::MaxPool2d, AvgPool2d and AdaptiveAvgPool2d against naive loops,
// adaptive pooling for divisible and non-divisible sizes, gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "nn/functional.h"
#include "nn/layers/pooling.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;

enum class Kind { Max, Avg, AvgExcludePad };

std::vector<double> naive_pool(const Tensor& xt, Kind kind, int64_t k, int64_t s, int64_t p) {
  auto x = xt.to_vector<double>();
  const int64_t planes = xt.size(0) * xt.size(1), H = xt.size(2), W = xt.size(3);
  const int64_t OH = (H + 2 * p - k) / s + 1, OW = (W + 2 * p - k) / s + 1;
  std::vector<double> y;
  for (int64_t c = 0; c < planes; ++c)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double best = -INFINITY, sum = 0;
        int64_t inside = 0;
        for (int64_t i = oh * s - p; i < oh * s - p + k; ++i)
          for (int64_t j = ow * s - p; j < ow * s - p + k; ++j) {
            if (i < 0 || i >= H || j < 0 || j >= W) continue;
            const double v = x[(c * H + i) * W + j];
            best = std::max(best, v), sum += v, ++inside;
          }
        y.push_back(kind == Kind::Max ? best : sum / static_cast<double>(kind == Kind::Avg ? k * k : inside));
      }
  return y;
}

// PyTorch's adaptive windows: [floor(i*in/out), ceil((i+1)*in/out)).
std::vector<double> naive_adaptive(const Tensor& xt, int64_t oh, int64_t ow) {
  auto x = xt.to_vector<double>();
  const int64_t planes = xt.numel() / (xt.size(-2) * xt.size(-1)), H = xt.size(-2), W = xt.size(-1);
  std::vector<double> y;
  for (int64_t c = 0; c < planes; ++c)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const int64_t h0 = i * H / oh, h1 = static_cast<int64_t>(std::ceil((i + 1) * H / double(oh)));
        const int64_t w0 = j * W / ow, w1 = static_cast<int64_t>(std::ceil((j + 1) * W / double(ow)));
        double sum = 0;
        for (int64_t a = h0; a < h1; ++a)
          for (int64_t b = w0; b < w1; ++b) sum += x[(c * H + a) * W + b];
        y.push_back(sum / static_cast<double>((h1 - h0) * (w1 - w0)));
      }
  return y;
}

TEST(NnPool, MaxPool2dMatchesNaive) {
  manual_seed(50);
  Tensor x = randn({2, 3, 7, 6});
  nn::MaxPool2d pool(2);
  EXPECT_EQ(pool(x).shape(), (Shape{2, 3, 3, 3}));
  expect_near_vec(pool(x).to_vector<double>(), naive_pool(x, Kind::Max, 2, 2, 0), 0);
  nn::MaxPool2d strided({.kernel_size = 3, .stride = 2, .padding = 1});
  expect_near_vec(strided(x).to_vector<double>(), naive_pool(x, Kind::Max, 3, 2, 1), 0);
  EXPECT_EQ(strided.extra_repr(), "kernel_size=(3, 3), stride=(2, 2), padding=(1, 1)");
}

TEST(NnPool, AvgPool2dMatchesNaive) {
  manual_seed(51);
  Tensor x = randn({2, 2, 6, 7});
  nn::AvgPool2d pool(3);
  expect_near_vec(pool(x).to_vector<double>(), naive_pool(x, Kind::Avg, 3, 3, 0), 1e-5);
  nn::AvgPool2d padded({.kernel_size = 3, .stride = 1, .padding = 1});
  expect_near_vec(padded(x).to_vector<double>(), naive_pool(x, Kind::Avg, 3, 1, 1), 1e-5);
  nn::AvgPool2d exclude({.kernel_size = 3, .stride = 2, .padding = 1, .count_include_pad = false});
  expect_near_vec(exclude(x).to_vector<double>(), naive_pool(x, Kind::AvgExcludePad, 3, 2, 1), 1e-5);
}

TEST(NnPool, UnbatchedInputAndBadWindows) {
  manual_seed(52);
  Tensor x = randn({3, 4, 4});
  nn::MaxPool2d pool(2);
  EXPECT_EQ(pool(x).shape(), (Shape{3, 2, 2}));
  expect_near_vec(pool(x).to_vector<double>(), naive_pool(x.unsqueeze(0), Kind::Max, 2, 2, 0), 0);
  expect_error([] { nn::MaxPool2d({.kernel_size = 2, .padding = 2}); }, {"MaxPool2d", "half of kernel_size"});
  expect_error([&] { pool(randn({4, 4})); }, {"MaxPool2d", "[4, 4]"});
}

TEST(NnPool, AdaptiveAvgPoolDivisible) {
  manual_seed(53);
  Tensor x = randn({2, 3, 8, 6});
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{4, 3}, {1, 1}, {8, 6}, {2, 1}}) {
    nn::AdaptiveAvgPool2d pool({oh, ow});
    Tensor y = pool(x);
    EXPECT_EQ(y.shape(), (Shape{2, 3, oh, ow}));
    expect_near_vec(y.to_vector<double>(), naive_adaptive(x, oh, ow), 1e-5, pool.extra_repr());
  }
}

TEST(NnPool, AdaptiveAvgPoolNonDivisible) {
  manual_seed(54);
  Tensor x = randn({2, 3, 5, 7});
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{3, 4}, {2, 7}, {5, 3}, {4, 5}, {7, 9}}) {
    nn::AdaptiveAvgPool2d pool({oh, ow});
    Tensor y = pool(x);
    EXPECT_EQ(y.shape(), (Shape{2, 3, oh, ow}));
    expect_near_vec(y.to_vector<double>(), naive_adaptive(x, oh, ow), 1e-5, pool.extra_repr());
  }
  Tensor x3 = randn({3, 5, 7});  // unbatched
  expect_near_vec(nn::AdaptiveAvgPool2d(3)(x3).to_vector<double>(), naive_adaptive(x3, 3, 3), 1e-5);
}

TEST(NnPool, AdaptiveAvgPoolGradients) {
  manual_seed(55);
  auto f = [](int64_t oh, int64_t ow) {
    return [=](const std::vector<Tensor>& in) { return nn::functional::adaptive_avg_pool2d(in[0], {oh, ow}); };
  };
  EXPECT_TRUE(testing::gradcheck(f(3, 2), {randn({1, 2, 5, 4}, kFloat64)}));  // overlapping windows
  EXPECT_TRUE(testing::gradcheck(f(2, 2), {randn({1, 2, 4, 4}, kFloat64)}));  // the avg_pool2d path
}

}  // namespace
}  // namespace anvil
