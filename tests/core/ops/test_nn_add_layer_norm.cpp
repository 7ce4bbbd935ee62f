// add_layer_norm: the fused residual add + layer norm gives exactly what the
// two ops written apart give (values, mean/rstd and gradients, incl. the sum's
// gradient flowing on through the residual stream), passes gradcheck, and
// checks its arguments.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/core/ops/nn_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::gradcheck;
using testing::randn64;

// Same shape and dtype, and every value within tol (0: bit-identical as doubles).
::testing::AssertionResult same(const Tensor& a, const Tensor& b, double tol = 0) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    return ::testing::AssertionFailure() << "shape/dtype " << a.shape_str() << " " << a.dtype() << " vs "
                                         << b.shape_str() << " " << b.dtype();
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::abs(x[i] - y[i]) <= tol))
      return ::testing::AssertionFailure() << "at " << i << ": " << x[i] << " vs " << y[i];
  return ::testing::AssertionSuccess();
}

TEST(NnAddLayerNorm, EqualsAddThenLayerNorm) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    const Tensor x = randn({3, 5, 7}, dt), r = randn({3, 5, 7}, dt);
    const Tensor w = randn({7}, dt), b = randn({7}, dt);
    const auto [sum, out] = add_layer_norm(x, r, {7}, w, b, 1e-5);
    const Tensor want_sum = x + r;
    EXPECT_TRUE(same(sum, want_sum)) << dt;
    EXPECT_TRUE(same(out, layer_norm(want_sum, {7}, w, b, 1e-5))) << dt;
    EXPECT_EQ(out.shape(), x.shape());
  }
  // Without affine parameters, two normalised dims.
  const Tensor x = randn({4, 2, 3}), r = randn({4, 2, 3});
  EXPECT_TRUE(same(add_layer_norm(x, r, {2, 3}).out, layer_norm(x + r, {2, 3})));
}

TEST(NnAddLayerNorm, GradientsMatchTheUnfusedOps) {
  const Tensor x0 = randn64({4, 6}), r0 = randn64({4, 6}), w0 = randn64({6}), b0 = randn64({6});
  const Tensor gs = randn64({4, 6}), go = randn64({4, 6});
  auto run = [&](bool fused) {
    Tensor x = x0.clone().requires_grad_(), r = r0.clone().requires_grad_();
    Tensor w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
    Tensor sum, out;
    if (fused) {
      auto res = add_layer_norm(x, r, {6}, w, b);
      sum = res.sum;
      out = res.out;
    } else {
      sum = x + r;
      out = layer_norm(sum, {6}, w, b);
    }
    // The residual stream goes on (sum is used again), as in a transformer block.
    ((sum * gs).sum() + (out * go).sum()).backward();
    return std::vector<Tensor>{x.grad(), r.grad(), w.grad(), b.grad()};
  };
  const auto fused = run(true), plain = run(false);
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_TRUE(same(fused[i], plain[i], 1e-12)) << "input " << i;
}

TEST(NnAddLayerNorm, Gradcheck) {
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& t) {
        auto [sum, out] = add_layer_norm(t[0], t[1], {5}, t[2], t[3]);
        return out * 2.0 + sum.sin();
      },
      {randn64({3, 5}), randn64({3, 5}), randn64({5}), randn64({5})}));
}

TEST(NnAddLayerNorm, RejectsBadArguments) {
  const Tensor x = randn({2, 4});
  expect_error([&] { add_layer_norm(x, randn({2, 3}), {4}); }, {"add_layer_norm", "residual", "[2, 3]"});
  expect_error([&] { add_layer_norm(x, randn({1, 4}), {4}); }, {"add_layer_norm", "broadcasting"});
  expect_error([&] { add_layer_norm(x, x.to(kFloat64), {4}); }, {"add_layer_norm", "dtype"});
  expect_error([&] { add_layer_norm(x, x, {3}); }, {"layer_norm", "normalized_shape"});
}

}  // namespace
}  // namespace anvil
