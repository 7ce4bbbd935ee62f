// swiglu: the fused CPU kernel against its composed fallback (the registry's
// override removes the kernel, so the very same call runs the fallback),
// gradients against finite differences through both paths, the double
// backward, and the errors.
#include <gtest/gtest.h>

#include <string>

#include "core/autograd/engine.h"
#include "core/ops.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/swiglu_kernels.h"
#include "tests/core/gradcheck.h"

namespace anvil {
namespace {

using Fallback = kernel_registry::ScopedOverride<kernel::Swiglu>;
using FallbackBackward = kernel_registry::ScopedOverride<kernel::SwigluBackward>;

double max_diff(const Tensor& a, const Tensor& b) {
  return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
}

// The largest difference relative to the value's magnitude (at least 1), so
// a bound reads as units in the last place of the dtype.
double max_relative_diff(const Tensor& a, const Tensor& b) {
  const Tensor b64 = b.to(kFloat64);
  return ((a.to(kFloat64) - b64).abs() / maximum(b64.abs(), ones_like(b64))).max().item<double>();
}

TEST(Swiglu, TheKernelMatchesTheComposedFallbackInEveryDtype) {
  manual_seed(11);
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    const Tensor gate = (randn({7, 129}) * 4).to(dt), up = randn({7, 129}).to(dt);
    const Tensor fused = swiglu(gate, up);
    Tensor composed;
    {
      Fallback none(DeviceType::CPU, nullptr);
      composed = swiglu(gate, up);
    }
    EXPECT_EQ(fused.dtype(), dt);
    // The fused kernel rounds once, the composed ops after silu and after the
    // product: two units in the last place of the dtype apart at most.
    const double bound = dt == kFloat64 ? 1e-14 : dt == kFloat32 ? 1e-6 : dt == kFloat16 ? 2.0 / 1024 : 2.0 / 128;
    EXPECT_LT(max_relative_diff(fused, composed), bound) << dtype_name(dt);
    EXPECT_LT(max_relative_diff(fused, silu(gate.to(kFloat64)) * up.to(kFloat64)), bound) << dtype_name(dt);
  }
}

TEST(Swiglu, GradientsMatchFiniteDifferencesWithAndWithoutTheKernels) {
  manual_seed(12);
  const auto fn = [](const std::vector<Tensor>& in) { return swiglu(in[0], in[1]); };
  const std::vector<Tensor> inputs = {randn({4, 9}, kFloat64) * 3, randn({4, 9}, kFloat64)};
  EXPECT_TRUE(testing::gradcheck(fn, inputs));
  Fallback none(DeviceType::CPU, nullptr);
  FallbackBackward no_backward(DeviceType::CPU, nullptr);
  EXPECT_TRUE(testing::gradcheck(fn, inputs));
}

TEST(Swiglu, TheFusedBackwardGivesTheComposedGradients) {
  manual_seed(13);
  Tensor gate = (randn({3, 50}) * 3).requires_grad_(), up = randn({3, 50}).requires_grad_();
  const Tensor weights = randn({3, 50});
  (swiglu(gate, up) * weights).sum().backward();
  const Tensor g_gate = gate.grad().clone(), g_up = up.grad().clone();
  gate.grad().zero_();
  up.grad().zero_();
  (silu(gate) * up * weights).sum().backward();
  EXPECT_LT(max_diff(g_gate, gate.grad()), 1e-5);
  EXPECT_LT(max_diff(g_up, up.grad()), 1e-5);
}

TEST(Swiglu, DoubleBackwardIsComposed) {
  manual_seed(14);
  Tensor gate = randn({5, 6}, kFloat64).requires_grad_(), up = randn({5, 6}, kFloat64).requires_grad_();
  const auto second = [&](auto&& op) {
    autograd::BackwardOptions keep;
    keep.retain_graph = true;
    keep.create_graph = true;
    Tensor g = autograd::grad({op(gate, up).sum()}, {gate}, {}, keep)[0];
    return autograd::grad({(g * g).sum()}, {gate, up});
  };
  const auto fused = second([](const Tensor& a, const Tensor& b) { return swiglu(a, b); });
  const auto composed = second([](const Tensor& a, const Tensor& b) { return silu(a) * b; });
  EXPECT_LT(max_diff(fused[0], composed[0]), 1e-12);
  EXPECT_LT(max_diff(fused[1], composed[1]), 1e-12);
}

TEST(Swiglu, StridedInputsGiveTheDenseResult) {
  manual_seed(15);
  const Tensor gate = randn({40, 30}), up = randn({30, 40});
  EXPECT_LT(max_diff(swiglu(gate.t(), up), swiglu(gate.t().contiguous(), up)), 0.0 + 1e-30);
}

TEST(Swiglu, BadArgumentsAreClearErrors) {
  const auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string msg = message([] { swiglu(randn({2, 3}), randn({3, 2})); });
  EXPECT_NE(msg.find("swiglu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 2]"), std::string::npos) << msg;
  msg = message([] { swiglu(ones({2}, kInt64), ones({2}, kInt64)); });
  EXPECT_NE(msg.find("swiglu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("int64"), std::string::npos) << msg;
  msg = message([] { swiglu(randn({2}), randn({2}, kFloat64)); });
  EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil
