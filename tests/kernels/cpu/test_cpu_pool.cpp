// kernel::Pool2d and pool2d_backward against naive window loops, the
// backward passes also against finite differences of the forward.
#include <gtest/gtest.h>

#include <limits>

#include "tests/kernels/cpu/nn_kernel_test_util.h"
#include "core/dispatch.h"

namespace anvil::test {
namespace {

struct PoolCase {
  int64_t n, c, h, w, kh, kw, sh, sw, ph, pw;
  bool count_include_pad;
  bool ceil_mode;

  Pool2dParams params() const {
    Pool2dParams p;
    p.kernel[0] = kh;
    p.kernel[1] = kw;
    p.stride[0] = sh;
    p.stride[1] = sw;
    p.padding[0] = ph;
    p.padding[1] = pw;
    p.count_include_pad = count_include_pad;
    return p;
  }
  // PyTorch's output size, including its ceil-mode rule that the last
  // window must start inside the input or the left padding.
  static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t pad, bool ceil) {
    const int64_t span = in + 2 * pad - k;
    int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= in + pad) --o;
    return o;
  }
  Shape in_shape() const { return {n, c, h, w}; }
  Shape out_shape() const { return {n, c, out_size(h, kh, sh, ph, ceil_mode), out_size(w, kw, sw, pw, ceil_mode)}; }
  std::string name() const {
    return std::to_string(h) + "x" + std::to_string(w) + " k" + std::to_string(kh) + "x" + std::to_string(kw) + " s" +
           std::to_string(sh) + "," + std::to_string(sw) + " p" + std::to_string(ph) + "," + std::to_string(pw) +
           (count_include_pad ? "" : " exclude-pad") + (ceil_mode ? " ceil" : "");
  }
};

const PoolCase kCases[] = {
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, true, false},
    {2, 2, 7, 9, 3, 3, 2, 2, 1, 1, true, false},
    {1, 3, 7, 9, 3, 3, 2, 2, 1, 1, false, false},
    {2, 2, 6, 5, 3, 3, 1, 1, 1, 1, true, false},
    {1, 2, 9, 6, 3, 2, 2, 1, 1, 0, false, false},
    {2, 1, 7, 7, 2, 2, 2, 2, 0, 0, true, true},  // ceil mode: partial last window
    {1, 2, 8, 7, 3, 3, 3, 2, 1, 1, false, true},  // ceil mode with padding
    {1, 1, 5, 5, 5, 5, 1, 1, 2, 2, true, false},  // windows hang over both sides
};

// Clipped window of output (oh, ow) and the average-pool divisor, spelled
// out as PyTorch documents them.
void window(const PoolCase& c, int64_t oh, int64_t ow, int64_t& h0, int64_t& h1, int64_t& w0, int64_t& w1,
            int64_t& divisor) {
  h0 = oh * c.sh - c.ph;
  w0 = ow * c.sw - c.pw;
  h1 = std::min(h0 + c.kh, c.h + c.ph);
  w1 = std::min(w0 + c.kw, c.w + c.pw);
  const int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, c.h);
  w1 = std::min(w1, c.w);
  divisor = c.count_include_pad ? padded : (h1 - h0) * (w1 - w0);
}

std::vector<double> reference_forward(PoolKind kind, const PoolCase& c, const View& in) {
  std::vector<double> out;
  for_each_index(c.out_shape(), [&](const Shape& o) {
    int64_t h0, h1, w0, w1, divisor;
    window(c, o[2], o[3], h0, h1, w0, w1, divisor);
    double best = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) {
        const double v = at(in, {o[0], o[1], ih, iw});
        best = std::max(best, v);
        sum += v;
      }
    out.push_back(kind == PoolKind::Max ? best : sum / static_cast<double>(divisor));
  });
  return out;
}

std::vector<double> reference_backward(PoolKind kind, const PoolCase& c, const View& in, const View& grad_out) {
  std::vector<double> grad_in(static_cast<size_t>(c.n * c.c * c.h * c.w), 0.0);
  auto flat = [&](const Shape& o, int64_t ih, int64_t iw) {
    return static_cast<size_t>(((o[0] * c.c + o[1]) * c.h + ih) * c.w + iw);
  };
  for_each_index(c.out_shape(), [&](const Shape& o) {
    int64_t h0, h1, w0, w1, divisor;
    window(c, o[2], o[3], h0, h1, w0, w1, divisor);
    const double g = at(grad_out, o);
    if (kind == PoolKind::Avg) {
      for (int64_t ih = h0; ih < h1; ++ih)
        for (int64_t iw = w0; iw < w1; ++iw) grad_in[flat(o, ih, iw)] += g / static_cast<double>(divisor);
      return;
    }
    int64_t bh = h0, bw = w0;  // first maximum in row-major window order
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw)
        if (at(in, {o[0], o[1], ih, iw}) > at(in, {o[0], o[1], bh, bw})) bh = ih, bw = iw;
    grad_in[flat(o, bh, bw)] += g;
  });
  return grad_in;
}

template <typename T> void check_case(PoolKind kind, const PoolCase& c, bool strided, double tol, std::mt19937& rng) {
  const std::string name = std::string(kind == PoolKind::Max ? "max " : "avg ") + c.name() +
                           (strided ? " strided " : " ") + dtype_name(dtype_of<T>::value);
  const Shape in_strides = strided ? reversed_padded_strides(c.in_shape()) : contiguous_strides(c.in_shape());
  const Shape out_strides = strided ? reversed_padded_strides(c.out_shape()) : contiguous_strides(c.out_shape());
  auto in = random_tensor<T>(c.in_shape(), in_strides, rng);
  auto out = filled_tensor<T>(c.out_shape(), out_strides);
  kernel_for<kernel::Pool2d>(DeviceType::CPU)(kind, out.view, in.view, c.params());
  expect_close(values(out.view), reference_forward(kind, c, in.view), tol, tol, name + " forward");

  auto grad_out = random_tensor<T>(c.out_shape(), out_strides, rng);
  auto grad_in = filled_tensor<T>(c.in_shape(), in_strides);
  kernel_for<kernel::Pool2dBackward>(DeviceType::CPU)(kind, grad_in.view, grad_out.view, in.view, out.view, c.params());
  expect_close(values(grad_in.view), reference_backward(kind, c, in.view, grad_out.view), tol, tol, name + " backward");
}

TEST(CpuPool2d, MaxAndAvgMatchNaiveLoops) {
  std::mt19937 rng(20);
  for (PoolKind kind : {PoolKind::Max, PoolKind::Avg})
    for (const auto& c : kCases) {
      check_case<float>(kind, c, false, 1e-6, rng);
      check_case<double>(kind, c, false, 1e-14, rng);
      check_case<double>(kind, c, true, 1e-14, rng);
    }
}

TEST(CpuPool2d, Float16ComputesInFloat) {
  std::mt19937 rng(21);
  check_case<Half>(PoolKind::Max, kCases[1], false, 1e-3, rng);
  check_case<BFloat16>(PoolKind::Avg, kCases[1], false, 1e-2, rng);
}

TEST(CpuPool2d, LargeEnoughToUseThreadsMatchesNaive) {
  std::mt19937 rng(22);
  const PoolCase c{8, 16, 28, 28, 2, 2, 2, 2, 0, 0, true, false};
  check_case<float>(PoolKind::Max, c, false, 1e-6, rng);
  check_case<float>(PoolKind::Avg, c, false, 1e-6, rng);
}

// Central differences of sum(pool(x) * g) in float64.
TEST(CpuPool2d, BackwardMatchesFiniteDifferences) {
  std::mt19937 rng(23);
  for (PoolKind kind : {PoolKind::Max, PoolKind::Avg}) {
    for (const PoolCase& c : {kCases[1], kCases[2], kCases[6]}) {
      auto in = random_tensor<double>(c.in_shape(), rng);
      auto grad_out = random_tensor<double>(c.out_shape(), rng);
      auto out = filled_tensor<double>(c.out_shape());
      auto grad_in = filled_tensor<double>(c.in_shape());
      kernel_for<kernel::Pool2d>(DeviceType::CPU)(kind, out.view, in.view, c.params());
      kernel_for<kernel::Pool2dBackward>(DeviceType::CPU)(kind, grad_in.view, grad_out.view, in.view, out.view,
                                                          c.params());
      auto objective = [&] {
        kernel_for<kernel::Pool2d>(DeviceType::CPU)(kind, out.view, in.view, c.params());
        double s = 0;
        for (size_t i = 0; i < out.storage.size(); ++i) s += out.storage[i] * grad_out.storage[i];
        return s;
      };
      const double eps = 1e-6;
      for (size_t i = 0; i < in.storage.size(); ++i) {
        const double x = in.storage[i];
        in.storage[i] = x + eps;
        const double up = objective();
        in.storage[i] = x - eps;
        const double down = objective();
        in.storage[i] = x;
        EXPECT_NEAR(grad_in.storage[i], (up - down) / (2 * eps), 1e-6) << c.name() << " element " << i;
      }
    }
  }
}

TEST(CpuPool2d, MaxBackwardRoutesTiesToTheFirstMaximum) {
  // A constant plane: every window's maximum is tied, the first one wins.
  const PoolCase c{1, 1, 4, 4, 2, 2, 2, 2, 0, 0, true, false};
  auto in = filled_tensor<float>(c.in_shape(), 1.5);
  auto out = filled_tensor<float>(c.out_shape());
  kernel_for<kernel::Pool2d>(DeviceType::CPU)(PoolKind::Max, out.view, in.view, c.params());
  auto grad_out = tensor_of<float>(c.out_shape(), {1, 2, 3, 4});
  auto grad_in = filled_tensor<float>(c.in_shape());
  kernel_for<kernel::Pool2dBackward>(DeviceType::CPU)(PoolKind::Max, grad_in.view, grad_out.view, in.view, out.view,
                                                      c.params());
  const std::vector<double> expected = {1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0};
  expect_close(values(grad_in.view), expected, 0, 0, "tied max");
}

TEST(CpuPool2d, MaxPaddingActsAsMinusInfinity) {
  // All inputs negative: a zero-padded max would return 0 at the borders.
  const PoolCase c{1, 1, 3, 3, 3, 3, 1, 1, 1, 1, true, false};
  std::mt19937 rng(24);
  auto in = random_tensor<float>(c.in_shape(), rng, -3.0, -1.0);
  auto out = filled_tensor<float>(c.out_shape());
  kernel_for<kernel::Pool2d>(DeviceType::CPU)(PoolKind::Max, out.view, in.view, c.params());
  for (double v : values(out.view)) EXPECT_LT(v, -0.5);
  expect_close(values(out.view), reference_forward(PoolKind::Max, c, in.view), 0, 0, "negative max");
}

TEST(CpuPool2d, MaxPropagatesNaN) {
  const PoolCase c{1, 1, 2, 2, 2, 2, 2, 2, 0, 0, true, false};
  auto in = tensor_of<float>(c.in_shape(), {1, NAN, 3, 2});
  auto out = filled_tensor<float>(c.out_shape(), 0.0);
  kernel_for<kernel::Pool2d>(DeviceType::CPU)(PoolKind::Max, out.view, in.view, c.params());
  EXPECT_TRUE(std::isnan(at(out.view, {0, 0, 0, 0})));
}

TEST(CpuPool2d, MaxBackwardSendsTheGradientToTheFirstNaN) {
  // Two 2x2 windows side by side: NaNs at positions 1 and 3 of the first,
  // one NaN at position 2 of the second.
  const PoolCase c{1, 1, 2, 4, 2, 2, 2, 2, 0, 0, true, false};
  auto in = tensor_of<float>(c.in_shape(), {1, NAN, 5, 4, 3, NAN, NAN, 2});
  auto out = filled_tensor<float>(c.out_shape());
  kernel_for<kernel::Pool2d>(DeviceType::CPU)(PoolKind::Max, out.view, in.view, c.params());
  auto grad_out = tensor_of<float>(c.out_shape(), {7, 9});
  auto grad_in = filled_tensor<float>(c.in_shape(), -1.0);
  kernel_for<kernel::Pool2dBackward>(DeviceType::CPU)(PoolKind::Max, grad_in.view, grad_out.view, in.view, out.view,
                                                      c.params());
  const std::vector<double> expected = {0, 7, 0, 0, 0, 0, 9, 0};
  expect_close(values(grad_in.view), expected, 0, 0, "NaN max");
}

TEST(CpuPool2d, MaxBackwardFindsTheWinnerInEveryWindowPosition) {
  // One 2x2 window per plane, its maximum at position p of plane p.
  const PoolCase c{1, 4, 2, 2, 2, 2, 2, 2, 0, 0, true, false};
  auto in = tensor_of<float>(c.in_shape(), {9, 1, 2, 3, 1, 9, 2, 3, 1, 2, 9, 3, 1, 2, 3, 9});
  auto out = filled_tensor<float>(c.out_shape());
  kernel_for<kernel::Pool2d>(DeviceType::CPU)(PoolKind::Max, out.view, in.view, c.params());
  auto grad_out = tensor_of<float>(c.out_shape(), {1, 2, 3, 4});
  auto grad_in = filled_tensor<float>(c.in_shape(), -1.0);
  kernel_for<kernel::Pool2dBackward>(DeviceType::CPU)(PoolKind::Max, grad_in.view, grad_out.view, in.view, out.view,
                                                      c.params());
  const std::vector<double> expected = {1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4};
  expect_close(values(grad_in.view), expected, 0, 0, "winner positions");
}

TEST(CpuPool2d, PaddingLargerThanHalfTheKernelIsAClearError) {
  Pool2dParams p;
  p.kernel[0] = p.kernel[1] = 2;
  p.padding[0] = p.padding[1] = 2;
  auto in = filled_tensor<float>({1, 1, 4, 4});
  auto out = filled_tensor<float>({1, 1, 5, 5});
  const std::string msg =
      error_message([&] { kernel_for<kernel::Pool2d>(DeviceType::CPU)(PoolKind::Max, out.view, in.view, p); });
  EXPECT_NE(msg.find("pool2d"), std::string::npos) << msg;
  EXPECT_NE(msg.find("padding"), std::string::npos) << msg;
}

TEST(CpuPool2d, OutputTooLargeIsAClearError) {
  Pool2dParams p;
  auto in = filled_tensor<float>({1, 1, 4, 4});
  auto out = filled_tensor<float>({1, 1, 3, 2});
  const std::string msg =
      error_message([&] { kernel_for<kernel::Pool2d>(DeviceType::CPU)(PoolKind::Avg, out.view, in.view, p); });
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;
}

TEST(CpuPool2d, IntegerDtypeIsAClearError) {
  auto in = filled_tensor<int64_t>({1, 1, 4, 4}, 1);
  auto out = filled_tensor<int64_t>({1, 1, 2, 2}, 0);
  const std::string msg = error_message(
      [&] { kernel_for<kernel::Pool2d>(DeviceType::CPU)(PoolKind::Max, out.view, in.view, Pool2dParams{}); });
  EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::test
