// atan and log2, the unary rows CONTRIBUTING.md's recipe was followed for
// (kernels/ops/unary_ops.h). The sweeps (tests/kernels/ops/test_op_tables.cpp
// and the CUDA one) hold every backend to the functors, whose reference is
// the functor itself in double; this holds the functors to libm in double on
// random inputs and to the exact values PyTorch gives, and the gradients to
// finite differences and to hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/ops.h"
#include "tests/core/gradcheck.h"

namespace anvil {
namespace {

using testing::gradcheck;

// NaN where NaN is wanted, infinities exactly, the rest within tol relative to 1 + |want|.
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

TEST(ElementwiseAtanLog2, MatchLibmAndPyTorch) {
  manual_seed(41);
  const Tensor x = randn({4, 6}, kFloat64) * 4.0;
  const Tensor positive = rand({4, 6}, kFloat64) * 100.0 + 0.1;
  std::vector<double> want_atan, want_log2;
  for (double v : x.to_vector<double>()) want_atan.push_back(std::atan(v));
  for (double v : positive.to_vector<double>()) want_log2.push_back(std::log2(v));
  expect_values(atan(x), want_atan, 1e-15);
  expect_values(log2(positive), want_log2, 1e-15);
  expect_values(x.to(kFloat32).atan(), want_atan, 1e-6);  // the method form, float32
  expect_values(positive.to(kFloat32).log2(), want_log2, 1e-6);
  // Exact where libm is: powers of two, the limits, the signed zero.
  EXPECT_EQ(log2(from_vector<float>({8.0f, 0.5f, 1.0f, 0x1p-100f})).to_vector<float>(),
            (std::vector<float>{3.0f, -1.0f, 0.0f, -100.0f}));
  expect_values(log2(from_vector<double>({0.0, -0.0, -1.0, INFINITY, NAN})),
                {-INFINITY, -INFINITY, NAN, INFINITY, NAN});
  expect_values(atan(from_vector<double>({INFINITY, -INFINITY, NAN, 1.0})), {M_PI / 2, -M_PI / 2, NAN, M_PI / 4});
  EXPECT_TRUE(std::signbit(atan(from_vector<float>({-0.0f})).item<float>()));
  // Integer inputs compute in float32, as torch.log2 and torch.atan.
  const Tensor ints = from_vector<int64_t>({1, 4, 1024});
  EXPECT_EQ(log2(ints).dtype(), kFloat32);
  EXPECT_EQ(log2(ints).to_vector<float>(), (std::vector<float>{0.0f, 2.0f, 10.0f}));
  EXPECT_EQ(atan(from_vector<int32_t>({0})).dtype(), kFloat32);
  // bfloat16 and float16 compute in float and round once.
  EXPECT_EQ(log2(from_vector<float>({64.0f}).to(kBFloat16)).item<float>(), 6.0f);
  EXPECT_NEAR(atan(from_vector<float>({2.0f}).to(kFloat16)).item<double>(), std::atan(2.0), 1e-3);
  // Gradients: 1 / (1 + x^2) and 1 / (x ln 2), checked through autograd by value too.
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return atan(in[0]); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return log2(in[0]); }, {positive}));
  Tensor leaf = from_vector<double>({2.0, -3.0}).requires_grad_(true);
  atan(leaf).sum().backward();
  expect_values(leaf.grad(), {1.0 / 5.0, 1.0 / 10.0});
  Tensor leaf2 = from_vector<double>({4.0, 0.25}).requires_grad_(true);
  log2(leaf2).sum().backward();
  expect_values(leaf2.grad(), {1.0 / (4.0 * M_LN2), 1.0 / (0.25 * M_LN2)});
}

TEST(ElementwiseAtanLog2, RefuseAnUndefinedInputByName) {
  try {
    (void)log2(Tensor());
    ADD_FAILURE() << "log2 of an undefined tensor ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("log2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace anvil
