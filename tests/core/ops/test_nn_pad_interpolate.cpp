// pad and interpolate: values PyTorch gives (written out), a direct
// four-point bilinear reference, gradients against finite differences, and
// the arguments they refuse.
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

Tensor row(std::vector<double> v) { return from_vector<double>(v, {1, 1, static_cast<int64_t>(v.size())}); }

TEST(NnPad, OneDimModesAsPyTorch) {
  Tensor x = row({1, 2, 3, 4});
  expect_near_vec(pad(x, {2, 1}).to_vector<double>(), {0, 0, 1, 2, 3, 4, 0}, 0);
  expect_near_vec(pad(x, {1, 2}, PadMode::Constant, -1.5).to_vector<double>(), {-1.5, 1, 2, 3, 4, -1.5, -1.5}, 0);
  expect_near_vec(pad(x, {2, 2}, PadMode::Reflect).to_vector<double>(), {3, 2, 1, 2, 3, 4, 3, 2}, 0);
  expect_near_vec(pad(x, {3, 3}, PadMode::Reflect).to_vector<double>(), {4, 3, 2, 1, 2, 3, 4, 3, 2, 1}, 0);
  expect_near_vec(pad(x, {2, 2}, PadMode::Replicate).to_vector<double>(), {1, 1, 1, 2, 3, 4, 4, 4}, 0);
  expect_near_vec(pad(x, {2, 3}, PadMode::Circular).to_vector<double>(), {3, 4, 1, 2, 3, 4, 1, 2, 3}, 0);
  expect_near_vec(pad(x, {-1, 1}).to_vector<double>(), {2, 3, 4, 0}, 0);  // negative amounts crop
  EXPECT_EQ(pad(x, {-1, -2}).shape(), (Shape{1, 1, 1}));
}

TEST(NnPad, TwoAndThreeDims) {
  Tensor x = arange(6.0, TensorOptions().dtype(kFloat64)).view({1, 2, 3});  // [[0,1,2],[3,4,5]]
  Tensor c = pad(x, {1, 0, 0, 1});
  EXPECT_EQ(c.shape(), (Shape{1, 3, 4}));
  expect_near_vec(c.to_vector<double>(), {0, 0, 1, 2, 0, 3, 4, 5, 0, 0, 0, 0}, 0);
  Tensor rf = pad(x, {1, 1, 1, 0}, PadMode::Reflect);
  expect_near_vec(rf.to_vector<double>(), {4, 3, 4, 5, 4, 1, 0, 1, 2, 1, 4, 3, 4, 5, 4}, 0);
  Tensor rp = pad(x, {0, 1, 1, 1}, PadMode::Replicate);
  expect_near_vec(rp.to_vector<double>(), {0, 1, 2, 2, 0, 1, 2, 2, 3, 4, 5, 5, 3, 4, 5, 5}, 0);
  // Three trailing dims of a 5-D input, constant.
  Tensor v = randn64({1, 2, 2, 3, 2});
  Tensor p3 = pad(v, {1, 1, 0, 2, 1, 0});
  EXPECT_EQ(p3.shape(), (Shape{1, 2, 3, 5, 4}));
  EXPECT_NEAR(p3.sum().item<double>(), v.sum().item<double>(), 1e-12);
  EXPECT_LT(testing::max_abs_diff(p3.narrow(2, 1, 2).narrow(3, 0, 3).narrow(4, 1, 2), v), 1e-15);
}

TEST(NnPad, EmptyBatchAndEmptyPaddedDim) {
  EXPECT_EQ(pad(randn64({0, 3, 4}), {1, 1}, PadMode::Reflect).shape(), (Shape{0, 3, 6}));
  Tensor c = pad(randn64({2, 0}), {1, 2}, PadMode::Constant, 3.0);
  EXPECT_EQ(c.shape(), (Shape{2, 3}));
  expect_near_vec(c.to_vector<double>(), std::vector<double>(6, 3.0), 0);
  expect_error([&] { pad(randn64({2, 0}), {1, 1}, PadMode::Replicate); }, {"pad", "replicate", "non-empty"});
}

TEST(NnPad, Gradcheck) {
  manual_seed(7);
  for (PadMode mode : {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& t) {
          return pad(t[0], {2, 1, 1, 2}, mode, 0.5);
        },
        {randn64({2, 3, 4})}))
        << static_cast<int>(mode);
  }
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return pad(t[0], {-1, 2}); }, {randn64({2, 4})}));
}

TEST(NnPad, RefusesBadAmounts) {
  Tensor x = randn64({2, 3, 4});
  expect_error([&] { pad(x, {1, 2, 3}); }, {"pad", "even number", "[2, 3, 4]"});
  expect_error([&] { pad(x, {4, 0}, PadMode::Reflect); }, {"pad", "reflect", "< the dim's size"});
  expect_error([&] { pad(x, {1, 1, 1, 1, 1, 1}, PadMode::Replicate); }, {"pad", "replicate", "batch dim"});
  expect_error([&] { pad(x, {-1, 0}, PadMode::Reflect); }, {"pad", "non-negative"});
  expect_error([&] { pad(x, {-3, -2}); }, {"pad", "below size 0"});
}

// PyTorch's bilinear sample at output (i, j), computed directly from the four
// neighbours (not separably, as the op does).
double bilinear_at(const std::vector<double>& img, int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t i, int64_t j,
                   bool align) {
  auto src = [&](int64_t o, int64_t in, int64_t out) {
    if (align) return out > 1 ? static_cast<double>(o) * (in - 1) / (out - 1) : 0.0;
    return std::max(0.0, (o + 0.5) * in / out - 0.5);
  };
  const double sy = src(i, h, oh), sx = src(j, w, ow);
  const int64_t y0 = std::min(static_cast<int64_t>(sy), h - 1), x0 = std::min(static_cast<int64_t>(sx), w - 1);
  const int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
  const double ly = sy - y0, lx = sx - x0;
  auto at = [&](int64_t y, int64_t x) { return img[static_cast<size_t>(y * w + x)]; };
  return (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x1)) + ly * ((1 - lx) * at(y1, x0) + lx * at(y1, x1));
}

TEST(NnInterpolate, BilinearMatchesTheFourPointFormula) {
  manual_seed(8);
  Tensor x = randn64({1, 1, 3, 4});
  const auto img = x.to_vector<double>();
  for (bool align : {false, true}) {
    for (Shape size : {Shape{5, 7}, Shape{2, 3}, Shape{6, 1}}) {
      InterpolateOptions o;
      o.size = {size[0], size[1]};
      o.mode = InterpolateMode::Bilinear;
      o.align_corners = align;
      Tensor y = interpolate(x, o);
      ASSERT_EQ(y.shape(), (Shape{1, 1, size[0], size[1]}));
      std::vector<double> want;
      for (int64_t i = 0; i < size[0]; ++i)
        for (int64_t j = 0; j < size[1]; ++j) want.push_back(bilinear_at(img, 3, 4, size[0], size[1], i, j, align));
      expect_near_vec(y.to_vector<double>(), want, 1e-12, align ? "align_corners" : "half-pixel");
    }
  }
}

TEST(NnInterpolate, KnownValues) {
  Tensor x = arange(4.0, TensorOptions().dtype(kFloat64)).view({1, 1, 2, 2});
  InterpolateOptions o;
  o.scale_factor = {2.0};
  Tensor n = interpolate(x, o);
  expect_near_vec(n.to_vector<double>(), {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}, 0);
  o.mode = InterpolateMode::Bilinear;
  const std::vector<double> w{0, 0.25, 0.75, 1};
  std::vector<double> want;
  for (double wi : w)
    for (double wj : w) want.push_back(2 * wi + wj);
  expect_near_vec(interpolate(x, o).to_vector<double>(), want, 1e-12);
  // Nearest with uneven ratios: PyTorch's floor(o * in / out) and floor(o / scale).
  Tensor r5 = row({10, 11, 12, 13, 14});
  InterpolateOptions by_size;
  by_size.size = {3};
  expect_near_vec(interpolate(r5, by_size).to_vector<double>(), {10, 11, 13}, 0);
  InterpolateOptions by_scale;
  by_scale.scale_factor = {1.5};
  expect_near_vec(interpolate(row({1, 2, 3}), by_scale).to_vector<double>(), {1, 1, 2, 3}, 0);
  // linear on [N, C, L]
  InterpolateOptions lin;
  lin.size = {3};
  lin.mode = InterpolateMode::Linear;
  lin.align_corners = true;
  expect_near_vec(interpolate(row({0, 4}), lin).to_vector<double>(), {0, 2, 4}, 1e-12);
}

TEST(NnInterpolate, Gradcheck) {
  manual_seed(9);
  for (bool align : {false, true}) {
    InterpolateOptions o;
    o.size = {5, 3};
    o.mode = InterpolateMode::Bilinear;
    o.align_corners = align;
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& t) { return interpolate(t[0], o); }, {randn64({1, 2, 3, 4})}));
  }
  InterpolateOptions nearest;
  nearest.scale_factor = {1.7, 0.6};
  EXPECT_TRUE(
      gradcheck([&](const std::vector<Tensor>& t) { return interpolate(t[0], nearest); }, {randn64({2, 1, 3, 5})}));
}

TEST(NnInterpolate, RefusesBadArguments) {
  Tensor x = randn64({1, 2, 3, 4});
  InterpolateOptions both;
  both.size = {2, 2};
  both.scale_factor = {2};
  expect_error([&] { interpolate(x, both); }, {"interpolate", "exactly one of size and scale_factor"});
  InterpolateOptions bilinear3d;
  bilinear3d.size = {4};
  bilinear3d.mode = InterpolateMode::Bilinear;
  expect_error([&] { interpolate(randn64({1, 2, 3}), bilinear3d); }, {"interpolate", "bilinear", "[N, C, H, W]"});
  InterpolateOptions align_nearest;
  align_nearest.size = {4, 4};
  align_nearest.align_corners = true;
  expect_error([&] { interpolate(x, align_nearest); }, {"interpolate", "align_corners"});
  InterpolateOptions three;
  three.size = {4, 4, 4};
  expect_error([&] { interpolate(x, three); }, {"interpolate", "expected 1 or 2"});
  InterpolateOptions ints;
  ints.size = {2, 2};
  expect_error([&] { interpolate(x.to(kInt64), ints); }, {"interpolate"});
}

}  // namespace
}  // namespace anvil
