// The CPU backend's linear: out = in @ weight^T + bias against a naive loop,
// over weight layouts, a missing bias, strided views, an empty inner dim,
// rows enough for the threaded bias fill, a padded out, and the half types
// (which take kernel::Linear's default).
#include <gtest/gtest.h>

#include "tests/kernels/cpu/nn_kernel_test_util.h"
#include "core/dispatch.h"

namespace anvil::test {
namespace {

template <typename T> std::vector<double> reference_linear(const View& in, const View& weight, const View* bias) {
  const int64_t rows = in.shape[0], in_f = in.shape[1], out_f = weight.shape[0];
  std::vector<double> out(static_cast<size_t>(rows * out_f));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out_f; ++o) {
      double acc = bias ? at(*bias, {o}) : 0.0;
      for (int64_t i = 0; i < in_f; ++i) acc += at(in, {r, i}) * at(weight, {o, i});
      out[static_cast<size_t>(r * out_f + o)] = acc;
    }
  }
  return out;
}

template <typename T>
void check_linear(int64_t rows, int64_t in_f, int64_t out_f, bool with_bias, bool transposed_weight, bool strided_in,
                  uint32_t seed, int64_t out_row_pad = 0) {
  SCOPED_TRACE(::testing::Message() << "rows " << rows << ", in " << in_f << ", out " << out_f << ", bias " << with_bias
                                    << ", transposed weight " << transposed_weight << ", strided in " << strided_in
                                    << ", " << dtype_name(dtype_of<T>::value));
  std::mt19937 rng(seed);
  const Shape in_shape{rows, in_f}, w_shape{out_f, in_f};
  auto in = random_tensor<T>(in_shape,
                             strided_in ? strides_in_order(in_shape, {0, 1}, 3) : contiguous_strides(in_shape), rng);
  auto weight = random_tensor<T>(
      w_shape, transposed_weight ? strides_in_order(w_shape, {1, 0}) : contiguous_strides(w_shape), rng);
  auto bias = random_tensor<T>({out_f}, {2}, rng);  // every other element
  auto out = filled_tensor<T>({rows, out_f}, {out_f + out_row_pad, 1});
  const View* bias_view = with_bias ? &bias.view : nullptr;
  kernel_for<kernel::Linear>(DeviceType::CPU)(out.view, in.view, weight.view, bias_view);
  const double tol = std::is_same_v<T, double> ? 1e-12 : std::is_same_v<T, float> ? 1e-5 : 2e-2;
  expect_close(values(out.view), reference_linear<T>(in.view, weight.view, bias_view), tol, tol, "linear");
}

TEST(CpuLinear, DefaultMatchesLoop) {
  uint32_t seed = 1;
  for (bool bias : {false, true})
    for (bool wt : {false, true})
      for (bool strided : {false, true}) {
        check_linear<float>(7, 13, 5, bias, wt, strided, seed++);
        check_linear<double>(1, 3, 9, bias, wt, strided, seed++);
      }
}

TEST(CpuLinear, ManyRowsPaddedOutAndHalfTypes) {
  check_linear<float>(300, 64, 200, true, false, false, 60, 7);
  check_linear<double>(257, 33, 65, true, true, true, 61, 3);
  check_linear<Half>(9, 16, 7, true, false, false, 62);
  check_linear<BFloat16>(9, 16, 7, true, true, false, 63, 2);
}

TEST(CpuLinear, EmptyInnerDimGivesBias) {
  check_linear<float>(4, 0, 3, true, false, false, 50);
  check_linear<float>(4, 0, 3, false, false, false, 51);
}

}  // namespace
}  // namespace anvil::test
