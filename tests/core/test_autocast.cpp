// Autocast: which ops compute in the low precision and which in float32,
// that the values are those of computing on explicitly cast inputs, that
// gradients reach float32 leaves as float32, that backward and checkpoint
// recomputation keep each op's forward dtypes, and that the guard nests.
#include <gtest/gtest.h>

#include "core/autocast.h"
#include "core/autograd/checkpoint.h"
#include "core/ops.h"
#include "tests/core/ops/nn_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;

double max_diff(const Tensor& a, const Tensor& b) {
  return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
}

TEST(Autocast, LowPrecisionOpsComputeInTheGuardsDtype) {
  manual_seed(1);
  Tensor a = randn({4, 8}), b = randn({8, 3}), w = randn({3, 8}), bias = randn({3});
  Tensor img = randn({1, 2, 5, 5}), kernel = randn({3, 2, 3, 3});
  Tensor q = randn({2, 4, 8}), k = randn({2, 6, 8}), v = randn({2, 6, 8});
  for (DType low : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(low));
    AutocastGuard autocast(low);
    EXPECT_TRUE(autocast::is_enabled());
    Tensor mm_out = matmul(a, b);
    EXPECT_EQ(mm_out.dtype(), low);
    // Exactly what the op gives on inputs cast by hand.
    Tensor want;
    {
      AutocastGuard off(low, false);
      want = matmul(a.to(low), b.to(low));
    }
    EXPECT_EQ(max_diff(mm_out, want), 0.0);
    EXPECT_EQ(linear(a, w, bias).dtype(), low);
    EXPECT_EQ(mm(a, b).dtype(), low);
    EXPECT_EQ(bmm(q, k.transpose(1, 2)).dtype(), low);
    EXPECT_EQ(conv2d(img, kernel).dtype(), low);
    EXPECT_EQ(conv1d(randn({1, 2, 7}), randn({3, 2, 3})).dtype(), low);
    EXPECT_EQ(scaled_dot_product_attention(q, k, v).dtype(), low);
    // Float64 is never cast, as PyTorch.
    EXPECT_EQ(matmul(a.to(kFloat64), b.to(kFloat64)).dtype(), kFloat64);
    // Close to float32 within the low precision's rounding.
    EXPECT_LT(max_diff(linear(a, w, bias), linear(a, w, bias).to(kFloat32)), 1e-6);
    {
      AutocastGuard off(low, false);
      EXPECT_LT(max_diff(mm_out, matmul(a, b)), low == kBFloat16 ? 0.2 : 0.03);
    }
  }
  EXPECT_FALSE(autocast::is_enabled());
  EXPECT_EQ(matmul(a, b).dtype(), kFloat32);
}

TEST(Autocast, Float32OpsUpcastTheirLowPrecisionInputs) {
  manual_seed(2);
  Tensor x = randn({4, 6}).to(kBFloat16);
  Tensor targets = from_vector<int64_t>({0, 5, 2, 1}, {4});
  AutocastGuard autocast(kBFloat16);
  EXPECT_EQ(softmax(x, -1).dtype(), kFloat32);
  EXPECT_EQ(log_softmax(x, -1).dtype(), kFloat32);
  EXPECT_EQ(layer_norm(x, {6}).dtype(), kFloat32);
  EXPECT_EQ(batch_norm(x, {}, {}, {}, {}, {}).dtype(), kFloat32);
  EXPECT_EQ(group_norm(x.reshape({4, 6, 1}), 2, {}, {}, 1e-5).dtype(), kFloat32);
  EXPECT_EQ(rms_norm(x, {6}, {}, std::nullopt).dtype(), kFloat32);
  EXPECT_EQ(cross_entropy(x, targets).dtype(), kFloat32);
  EXPECT_EQ(mse_loss(x, x.to(kFloat32)).dtype(), kFloat32);
  EXPECT_EQ(sum(x).dtype(), kFloat32);
  EXPECT_EQ(prod(x, {1}).dtype(), kFloat32);
  EXPECT_EQ(logsumexp(x, {1}).dtype(), kFloat32);
  EXPECT_EQ(cumsum(x, 1).dtype(), kFloat32);
  // Values: the float32 op on the upcast input.
  Tensor want;
  {
    AutocastGuard off(kBFloat16, false);
    want = softmax(x.to(kFloat32), -1);
  }
  EXPECT_EQ(max_diff(softmax(x, -1), want), 0.0);
  // Ops on neither list keep their input's dtype; mixed inputs promote.
  EXPECT_EQ(relu(x).dtype(), kBFloat16);
  EXPECT_EQ(mean(x).dtype(), kBFloat16);
  EXPECT_EQ(add(x, randn({4, 6})).dtype(), kFloat32);
}

TEST(Autocast, GradientsReachFloat32LeavesAndBackwardKeepsForwardDtypes) {
  manual_seed(3);
  Tensor x = randn({5, 8}), w = randn({4, 8}).requires_grad_(true), b = randn({4}).requires_grad_(true);
  Tensor targets = from_vector<int64_t>({0, 3, 1, 2, 3}, {5});
  Tensor loss;
  {
    AutocastGuard autocast(kBFloat16);
    Tensor logits = linear(x, w, b);
    ASSERT_EQ(logits.dtype(), kBFloat16);
    loss = cross_entropy(logits, targets);
    ASSERT_EQ(loss.dtype(), kFloat32);
    loss.backward();  // inside the scope: the engine turns autocast off
  }
  ASSERT_EQ(w.grad().dtype(), kFloat32);
  ASSERT_EQ(b.grad().dtype(), kFloat32);
  // Against the same computation written with explicit casts.
  Tensor w2 = w.detach().requires_grad_(true), b2 = b.detach().requires_grad_(true);
  cross_entropy(linear(x.to(kBFloat16), w2.to(kBFloat16), b2.to(kBFloat16)).to(kFloat32), targets).backward();
  EXPECT_EQ(max_diff(w.grad(), w2.grad()), 0.0);
  EXPECT_EQ(max_diff(b.grad(), b2.grad()), 0.0);
}

TEST(Autocast, CheckpointRecomputesUnderTheForwardsAutocastState) {
  manual_seed(4);
  Tensor x = randn({3, 8}).requires_grad_(true), w = randn({6, 8}).requires_grad_(true);
  auto f = [&](const std::vector<Tensor>& in) { return softmax(linear(in[0], w), -1); };
  Tensor plain_gx, plain_gw;
  {
    AutocastGuard autocast(kBFloat16);
    f({x}).sum().backward();
  }
  plain_gx = x.grad().clone(), plain_gw = w.grad().clone();
  x.set_grad(Tensor()), w.set_grad(Tensor());
  Tensor out;
  {
    AutocastGuard autocast(kBFloat16);
    out = autograd::checkpoint(f, {x});
  }
  out.sum().backward();  // outside the scope: the recomputation must still cast
  EXPECT_EQ(max_diff(x.grad(), plain_gx), 0.0);
  EXPECT_EQ(max_diff(w.grad(), plain_gw), 0.0);
}

TEST(Autocast, GuardsNestAndRestoreAndRejectOtherDtypes) {
  EXPECT_FALSE(autocast::is_enabled());
  {
    AutocastGuard outer(kFloat16);
    {
      AutocastGuard inner(kBFloat16);
      EXPECT_EQ(autocast::dtype(), kBFloat16);
      {
        AutocastGuard off(kBFloat16, false);
        EXPECT_FALSE(autocast::is_enabled());
        EXPECT_EQ(matmul(randn({2, 2}), randn({2, 2})).dtype(), kFloat32);
      }
      EXPECT_TRUE(autocast::is_enabled());
    }
    EXPECT_EQ(autocast::dtype(), kFloat16);
    EXPECT_EQ(matmul(randn({2, 2}), randn({2, 2})).dtype(), kFloat16);
  }
  EXPECT_FALSE(autocast::is_enabled());
  expect_error([] { AutocastGuard bad(kFloat64); }, {"AutocastGuard", "bfloat16 or float16", "float64"});
}

}  // namespace
}  // namespace anvil
