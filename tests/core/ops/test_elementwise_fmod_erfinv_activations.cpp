// The op-table rows added for libtorch's habits (kernels/ops/unary_ops.h,
// binary_ops.h): erfinv, trunc, isinf/isfinite, fmod/remainder with
// PyTorch's sign rules, and the parametrised activations leaky_relu, elu,
// softplus (the Custom rows test_unary_op_gradients.cpp does not reach) with
// their gradients. The sweeps (tests/kernels/ops/test_op_tables.cpp and the
// CUDA one) check every row against its functor; this checks the functors
// against PyTorch's values.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/ops.h"
#include "tests/core/gradcheck.h"
#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::gradcheck;

void expect_values(const Tensor& got, const std::vector<double>& want, double tol = 1e-12) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(g[i])) << "at " << i;
    else if (std::isinf(want[i]))
      EXPECT_EQ(g[i], want[i]) << "at " << i;
    else
      EXPECT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << "at " << i;
  }
}

TEST(ElementwiseMore, FmodTakesTheDividendsSignRemainderTheDivisors) {
  const Tensor a = from_vector<double>({5.5, -5.5, 5.5, -5.5, 3.0});
  const Tensor b = from_vector<double>({2.0, 2.0, -2.0, -2.0, 1.5});
  expect_values(fmod(a, b), {1.5, -1.5, 1.5, -1.5, 0.0});
  expect_values(remainder(a, b), {1.5, 0.5, -0.5, -1.5, 0.0});
  const Tensor ia = from_vector<int64_t>({7, -7, 7, -7, INT64_MIN, 5});
  const Tensor ib = from_vector<int64_t>({3, 3, -3, -3, -1, 0});
  EXPECT_EQ(fmod(ia, ib).to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 1, -1, 0, 0}));
  EXPECT_EQ(remainder(ia, ib).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, -2, -1, 0, 0}));
  EXPECT_EQ(fmod(ia, ib).dtype(), kInt64);
  EXPECT_EQ(from_vector<int32_t>({-7}).remainder(3).to_vector<int64_t>(), (std::vector<int64_t>{2}));
  expect_values(from_vector<float>({-7.5f}).fmod(2), {-1.5});
}

TEST(ElementwiseMore, FmodAndRemainderGradients) {
  manual_seed(2);
  const Tensor a = randn({3, 4}, kFloat64) * 5.0;
  const Tensor b = rand({3, 4}, kFloat64) + 0.5;  // away from 0
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return fmod(in[0], in[1]); }, {a, b}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return remainder(in[0], in[1]); }, {a, -b}));
}

TEST(ElementwiseMore, ErfinvTruncAndTheFloatTests) {
  expect_values(erfinv(from_vector<double>({0.0, 0.5, -0.9, 0.999999, 1.0, -1.0, 1.5})),
                {0.0, 0.47693627620446987, -1.1630871536766743, 3.4589107372795, INFINITY, -INFINITY, NAN}, 1e-9);
  EXPECT_NEAR(erf(erfinv(from_vector<float>({0.3f}))).item<double>(), 0.3, 1e-6);
  expect_values(trunc(from_vector<double>({-2.7, 2.7, -0.2})), {-2.0, 2.0, -0.0});
  EXPECT_EQ(trunc(from_vector<int32_t>({-3})).to_vector<int64_t>(), (std::vector<int64_t>{-3}));
  const Tensor x = from_vector<float>({1.0f, INFINITY, -INFINITY, NAN});
  EXPECT_EQ(isinf(x).dtype(), kBool);
  EXPECT_EQ(isinf(x).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(x.isfinite().to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(isfinite(from_vector<int64_t>({1, 2})).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  manual_seed(9);
  const Tensor inside = rand({2, 5}, kFloat64) * 1.6 - 0.8;
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return erfinv(in[0]); }, {inside}));
}

TEST(ElementwiseMore, ActivationsMatchPyTorchsFormulas) {
  const Tensor x = from_vector<double>({-3.0, -0.5, 0.0, 0.5, 25.0, -4.0, 2.0});
  expect_values(leaky_relu(x, 0.2), {-0.6, -0.1, 0.0, 0.5, 25.0, -0.8, 2.0});
  expect_values(leaky_relu(x), {-0.03, -0.005, 0.0, 0.5, 25.0, -0.04, 2.0});
  expect_values(elu(x, 1.5),
                {1.5 * std::expm1(-3.0), 1.5 * std::expm1(-0.5), 0.0, 0.5, 25.0, 1.5 * std::expm1(-4.0), 2.0});
  std::vector<double> sp;
  for (double v : {-3.0, -0.5, 0.0, 0.5, 25.0, -4.0, 2.0})
    sp.push_back(v * 2 > 20 ? v : std::log1p(std::exp(2 * v)) / 2);
  expect_values(softplus(x, 2.0), sp);
  std::vector<double> mi, hs;
  for (double v : {-3.0, -0.5, 0.0, 0.5, 25.0, -4.0, 2.0}) {
    mi.push_back(v * std::tanh(std::log1p(std::exp(v))));
    hs.push_back(v * std::min(std::max(v + 3, 0.0), 6.0) / 6);
  }
  expect_values(mish(x), mi);
  expect_values(hardswish(x), hs);
  EXPECT_TRUE(std::isnan(leaky_relu(from_vector<float>({NAN})).item<double>()));
}

TEST(ElementwiseMore, ActivationGradientsMatchFiniteDifferences) {
  manual_seed(13);
  // Points away from the kinks at 0 (and +-3 for hardswish).
  const Tensor sign = where(gt(randn({3, 4}, kFloat64), 0.0), ones({3, 4}, kFloat64), full({3, 4}, -2.0, kFloat64));
  const Tensor x = (rand({3, 4}, kFloat64) + 0.2) * sign;
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return leaky_relu(in[0], 0.3); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return elu(in[0], 0.7); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return softplus(in[0], 1.5, 2.0); }, {x}));
  // The default parameters take the fused kernel (softplus_backward).
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return softplus(in[0] * 4.0); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return mish(in[0]); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return hardswish(in[0] * 2.5); }, {x}));
}

TEST(ElementwiseMore, RefusesBadInput) {
  EXPECT_ANVIL_ERROR(fmod(zeros({2, 3}), zeros({4})), "fmod: shapes [2, 3] and [4] cannot be broadcast");
  EXPECT_ANVIL_ERROR(softplus(zeros({2}), 0.0), "softplus: beta must be nonzero");
  EXPECT_ANVIL_ERROR(remainder(Tensor(), zeros({1})), "remainder");
}

}  // namespace
}  // namespace anvil
