// kernel::Conv2d and its two backward kernels against a naive direct
// convolution (and its naive gradients), plus the adjoint identities that tie
// the three together: <conv(x, w), g> = <x, dX(g, w)> = <w, dW(g, x)>.
#include <gtest/gtest.h>

#include "tests/kernels/cpu/nn_kernel_test_util.h"
#include "core/dispatch.h"

namespace anvil::test {
namespace {

struct ConvCase {
  int64_t n, c, h, w, cout, kh, kw;
  int64_t sh, sw, ph, pw, dh, dw, groups;
  bool bias;

  Conv2dParams params() const {
    Conv2dParams p;
    p.stride[0] = sh;
    p.stride[1] = sw;
    p.padding[0] = ph;
    p.padding[1] = pw;
    p.dilation[0] = dh;
    p.dilation[1] = dw;
    p.groups = groups;
    return p;
  }
  int64_t ho() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t wo() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  Shape in_shape() const { return {n, c, h, w}; }
  Shape weight_shape() const { return {cout, c / groups, kh, kw}; }
  Shape out_shape() const { return {n, cout, ho(), wo()}; }
  std::string name() const {
    return "conv n" + std::to_string(n) + " c" + std::to_string(c) + " " + std::to_string(h) + "x" + std::to_string(w) +
           " cout" + std::to_string(cout) + " k" + std::to_string(kh) + "x" + std::to_string(kw) + " s" +
           std::to_string(sh) + "," + std::to_string(sw) + " p" + std::to_string(ph) + "," + std::to_string(pw) + " d" +
           std::to_string(dh) + "," + std::to_string(dw) + " g" + std::to_string(groups);
  }
};

const ConvCase kCases[] = {
    {2, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},  // 3x3 same padding, odd sizes
    {1, 4, 8, 8, 6, 1, 1, 1, 1, 0, 0, 1, 1, 1, false},  // pointwise fast path
    {2, 4, 8, 7, 6, 1, 1, 1, 1, 0, 0, 1, 1, 2, true},  // pointwise, grouped
    {2, 3, 9, 8, 5, 1, 1, 2, 2, 0, 0, 1, 1, 1, true},  // 1x1 with stride: not the fast path
    {3, 2, 11, 10, 3, 3, 2, 2, 1, 1, 0, 1, 1, 1, true},  // asymmetric kernel and stride
    {2, 4, 10, 9, 6, 3, 3, 2, 2, 1, 2, 1, 1, 2, false},  // groups 2, stride 2
    {2, 6, 9, 9, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6, true},  // depthwise
    {1, 3, 12, 11, 4, 3, 3, 1, 1, 2, 2, 2, 2, 1, true},  // dilation 2
    {2, 2, 6, 7, 3, 2, 3, 3, 2, 3, 1, 2, 1, 1, false},  // padding > kernel/2, stride 3
    {1, 1, 5, 5, 2, 5, 5, 1, 1, 0, 0, 1, 1, 1, true},  // kernel covers the image
};

// Naive direct convolution from the views' elements.
std::vector<double> reference_forward(const ConvCase& c, const View& in, const View& weight, const View* bias) {
  const int64_t cin_g = c.c / c.groups, cout_g = c.cout / c.groups;
  std::vector<double> out;
  for_each_index(c.out_shape(), [&](const Shape& o) {
    const int64_t n = o[0], co = o[1], oh = o[2], ow = o[3], g = co / cout_g;
    double acc = bias ? at(*bias, {co}) : 0.0;
    for (int64_t ci = 0; ci < cin_g; ++ci)
      for (int64_t ki = 0; ki < c.kh; ++ki)
        for (int64_t kj = 0; kj < c.kw; ++kj) {
          const int64_t ih = oh * c.sh - c.ph + ki * c.dh, iw = ow * c.sw - c.pw + kj * c.dw;
          if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
          acc += at(in, {n, g * cin_g + ci, ih, iw}) * at(weight, {co, ci, ki, kj});
        }
    out.push_back(acc);
  });
  return out;
}

// Naive gradients: every (output, kernel tap) pair scatters its product.
void reference_backward(const ConvCase& c, const View& in, const View& weight, const View& grad_out,
                        std::vector<double>& grad_in, std::vector<double>& grad_weight) {
  const int64_t cin_g = c.c / c.groups, cout_g = c.cout / c.groups;
  grad_in.assign(static_cast<size_t>(View{nullptr, kFloat64, c.in_shape(), {}}.numel()), 0.0);
  grad_weight.assign(static_cast<size_t>(View{nullptr, kFloat64, c.weight_shape(), {}}.numel()), 0.0);
  for_each_index(c.out_shape(), [&](const Shape& o) {
    const int64_t n = o[0], co = o[1], oh = o[2], ow = o[3], g = co / cout_g;
    const double go = at(grad_out, o);
    for (int64_t ci = 0; ci < cin_g; ++ci)
      for (int64_t ki = 0; ki < c.kh; ++ki)
        for (int64_t kj = 0; kj < c.kw; ++kj) {
          const int64_t ih = oh * c.sh - c.ph + ki * c.dh, iw = ow * c.sw - c.pw + kj * c.dw;
          if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
          const int64_t cin = g * cin_g + ci;
          grad_in[((n * c.c + cin) * c.h + ih) * c.w + iw] += go * at(weight, {co, ci, ki, kj});
          grad_weight[((co * cin_g + ci) * c.kh + ki) * c.kw + kj] += go * at(in, {n, cin, ih, iw});
        }
  });
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Strides for a tensor: contiguous or every dim strided (the kernels copy).
Shape maybe_strided(const Shape& shape, bool strided) {
  return strided ? reversed_padded_strides(shape) : contiguous_strides(shape);
}

template <typename T> void check_case(const ConvCase& c, bool strided, double tol, std::mt19937& rng) {
  const std::string name = c.name() + (strided ? " strided" : "") + " " + dtype_name(dtype_of<T>::value);
  auto in = random_tensor<T>(c.in_shape(), maybe_strided(c.in_shape(), strided), rng);
  auto weight = random_tensor<T>(c.weight_shape(), maybe_strided(c.weight_shape(), strided), rng);
  auto bias = random_tensor<T>({c.cout}, rng);
  auto out = filled_tensor<T>(c.out_shape(), maybe_strided(c.out_shape(), strided));
  const View* bias_view = c.bias ? &bias.view : nullptr;
  kernel_for<kernel::Conv2d>(DeviceType::CPU)(out.view, in.view, weight.view, bias_view, c.params());
  expect_close(values(out.view), reference_forward(c, in.view, weight.view, bias_view), tol, tol, name + " forward");

  auto grad_out = random_tensor<T>(c.out_shape(), maybe_strided(c.out_shape(), strided), rng);
  auto grad_in = filled_tensor<T>(c.in_shape(), maybe_strided(c.in_shape(), strided));
  auto grad_weight = filled_tensor<T>(c.weight_shape(), maybe_strided(c.weight_shape(), strided));
  kernel_for<kernel::Conv2dBackwardInput>(DeviceType::CPU)(grad_in.view, grad_out.view, weight.view, c.params());
  kernel_for<kernel::Conv2dBackwardWeight>(DeviceType::CPU)(grad_weight.view, grad_out.view, in.view, c.params());
  std::vector<double> ref_grad_in, ref_grad_weight;
  reference_backward(c, in.view, weight.view, grad_out.view, ref_grad_in, ref_grad_weight);
  expect_close(values(grad_in.view), ref_grad_in, tol, tol, name + " grad_in");
  expect_close(values(grad_weight.view), ref_grad_weight, tol, tol, name + " grad_weight");

  // The adjoint identities hold for the kernels' outputs among themselves.
  auto out_nobias = filled_tensor<T>(c.out_shape());
  kernel_for<kernel::Conv2d>(DeviceType::CPU)(out_nobias.view, in.view, weight.view, nullptr, c.params());
  const double lhs = dot(values(out_nobias.view), values(grad_out.view));
  const double scale = std::abs(lhs) + 1.0;
  EXPECT_NEAR(dot(values(in.view), values(grad_in.view)), lhs, 50 * tol * scale) << name << " <x, dX(g)>";
  EXPECT_NEAR(dot(values(weight.view), values(grad_weight.view)), lhs, 50 * tol * scale) << name << " <w, dW(g)>";
}

TEST(CpuConv2d, Float64MatchesNaiveConvolutionAndGradients) {
  std::mt19937 rng(10);
  for (const auto& c : kCases) check_case<double>(c, false, 1e-12, rng);
}

TEST(CpuConv2d, Float32MatchesNaiveConvolutionAndGradients) {
  std::mt19937 rng(11);
  for (const auto& c : kCases) check_case<float>(c, false, 2e-5, rng);
}

TEST(CpuConv2d, NonContiguousInputsAndOutputs) {
  std::mt19937 rng(12);
  for (const auto& c : kCases) check_case<double>(c, true, 1e-12, rng);
}

TEST(CpuConv2d, Float16ComputesInFloat) {
  std::mt19937 rng(13);
  check_case<Half>(kCases[0], false, 1e-2, rng);
}

TEST(CpuConv2d, LargeEnoughToUseThreadsMatchesNaive) {
  // Big enough that images are spread over OpenMP threads (with more images
  // than threads, an odd number of them, so threads get unequal shares and
  // the per-thread weight-gradient sums are added up).
  std::mt19937 rng(14);
  check_case<float>({2, 8, 30, 29, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, true}, false, 1e-4, rng);
  check_case<float>({7, 8, 30, 29, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, true}, false, 1e-4, rng);
  check_case<double>({5, 8, 24, 25, 12, 3, 3, 2, 1, 1, 1, 1, 1, 2, false}, true, 1e-12, rng);  // grouped, strided
  check_case<double>({5, 8, 30, 29, 12, 1, 1, 1, 1, 0, 0, 1, 1, 2, true}, false, 1e-12, rng);  // pointwise, grouped
}

TEST(CpuConv2d, EmptyBatchGivesZeroWeightGradient) {
  const ConvCase c{0, 2, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, false};
  auto in = filled_tensor<float>(c.in_shape());
  auto grad_out = filled_tensor<float>(c.out_shape());
  auto grad_weight = filled_tensor<float>(c.weight_shape());
  kernel_for<kernel::Conv2dBackwardWeight>(DeviceType::CPU)(grad_weight.view, grad_out.view, in.view, c.params());
  expect_close(values(grad_weight.view), std::vector<double>(54, 0.0), 0, 0, "empty batch grad_weight");
}

TEST(CpuConv2d, MismatchedChannelsAreAClearError) {
  auto in = filled_tensor<float>({1, 3, 5, 5});
  auto weight = filled_tensor<float>({4, 2, 3, 3});  // expects 2 input channels
  auto out = filled_tensor<float>({1, 4, 3, 3});
  const std::string msg = error_message(
      [&] { kernel_for<kernel::Conv2d>(DeviceType::CPU)(out.view, in.view, weight.view, nullptr, Conv2dParams{}); });
  EXPECT_NE(msg.find("conv2d"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4, 2, 3, 3]"), std::string::npos) << msg;
}

TEST(CpuConv2d, WrongOutputSizeIsAClearError) {
  auto in = filled_tensor<float>({1, 2, 5, 5});
  auto weight = filled_tensor<float>({4, 2, 3, 3});
  auto out = filled_tensor<float>({1, 4, 5, 5});  // needs padding 1 for 5x5
  const std::string msg = error_message(
      [&] { kernel_for<kernel::Conv2d>(DeviceType::CPU)(out.view, in.view, weight.view, nullptr, Conv2dParams{}); });
  EXPECT_NE(msg.find("conv2d"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 3]"), std::string::npos) << msg;
}

TEST(CpuConv2d, GroupsThatDoNotDivideChannelsAreAClearError) {
  Conv2dParams p;
  p.groups = 2;
  auto in = filled_tensor<float>({1, 3, 5, 5});
  auto weight = filled_tensor<float>({4, 1, 3, 3});
  auto out = filled_tensor<float>({1, 4, 3, 3});
  const std::string msg =
      error_message([&] { kernel_for<kernel::Conv2d>(DeviceType::CPU)(out.view, in.view, weight.view, nullptr, p); });
  EXPECT_NE(msg.find("groups=2"), std::string::npos) << msg;
}

TEST(CpuConv2d, IntegerDtypeIsAClearError) {
  auto in = filled_tensor<int32_t>({1, 1, 3, 3}, 1);
  auto weight = filled_tensor<int32_t>({1, 1, 3, 3}, 1);
  auto out = filled_tensor<int32_t>({1, 1, 1, 1}, 0);
  const std::string msg = error_message(
      [&] { kernel_for<kernel::Conv2d>(DeviceType::CPU)(out.view, in.view, weight.view, nullptr, Conv2dParams{}); });
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil::test
