// GradScaler (fp16 dynamic loss scaling) and MasterWeights (fp32 masters).
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops.h"
#include "nn/optim/optim.h"
#include "nn/train/amp.h"

namespace anvil {
namespace {

using namespace anvil::nn;

Tensor param(std::vector<float> v) {
  Tensor p = from_vector(v);
  p.requires_grad_(true);
  return p;
}

TEST(GradScaler, ScalesTheLossAndUnscalesGradients) {
  Tensor w = param({1.0f, -2.0f, 3.0f});
  optim::SGD opt({w}, {.lr = 0.1});
  train::GradScaler scaler({.init_scale = 1024.0});
  Tensor loss = (w * w).sum();  // grad = 2w
  Tensor scaled = scaler.scale(loss);
  EXPECT_FLOAT_EQ(scaled.item<float>(), 14.0f * 1024.0f);
  scaled.backward();
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{2048.0f, -4096.0f, 6144.0f}));
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  // p -= lr * (2w) with the true gradient.
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1.0f - 0.2f, -2.0f + 0.4f, 3.0f - 0.6f}));
  EXPECT_DOUBLE_EQ(scaler.get_scale(), 1024.0);
  EXPECT_EQ(scaler.state_dict().growth_tracker, 1);
}

TEST(GradScaler, SkipsAStepWithAnInfGradientAndHalvesTheScale) {
  Tensor w = param({1.0f, 2.0f});
  Tensor v = param({5.0f});
  optim::SGD opt({w, v}, {.lr = 0.1});
  train::GradScaler scaler;  // 65536
  w.set_grad(from_vector(std::vector<float>{1.0f, INFINITY}));
  v.set_grad(from_vector(std::vector<float>{1.0f}));
  EXPECT_FALSE(scaler.step(opt));
  EXPECT_TRUE(scaler.found_inf());
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));  // untouched
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{5.0f}));
  scaler.update();
  EXPECT_DOUBLE_EQ(scaler.get_scale(), 32768.0);
  EXPECT_EQ(scaler.state_dict().growth_tracker, 0);

  // nan is caught the same way.
  w.set_grad(from_vector(std::vector<float>{NAN, 0.0f}));
  v.set_grad(Tensor());
  EXPECT_TRUE(scaler.unscale_(opt));
  EXPECT_FALSE(scaler.step(opt));
  scaler.update();
  EXPECT_DOUBLE_EQ(scaler.get_scale(), 16384.0);

  // A finite step goes through, with gradients divided by the scale.
  w.set_grad(from_vector(std::vector<float>{16384.0f, -32768.0f}));
  EXPECT_TRUE(scaler.step(opt));
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1.0f - 0.1f, 2.0f + 0.2f}));
  scaler.update();
  EXPECT_DOUBLE_EQ(scaler.get_scale(), 16384.0);
}

TEST(GradScaler, GrowsAfterGrowthIntervalGoodSteps) {
  Tensor w = param({1.0f});
  optim::SGD opt({w}, {.lr = 0.0});
  train::GradScaler scaler({.init_scale = 8.0, .growth_interval = 3});
  std::vector<double> scales;
  for (int i = 0; i < 7; ++i) {
    w.set_grad(from_vector(std::vector<float>{1.0f}));
    scaler.step(opt);
    scaler.update();
    scales.push_back(scaler.get_scale());
  }
  EXPECT_EQ(scales, (std::vector<double>{8, 8, 16, 16, 16, 32, 32}));
  // An overflow resets the count of good steps.
  w.set_grad(from_vector(std::vector<float>{INFINITY}));
  scaler.step(opt);
  scaler.update();
  EXPECT_DOUBLE_EQ(scaler.get_scale(), 16.0);
  EXPECT_EQ(scaler.state_dict().growth_tracker, 0);
}

TEST(GradScaler, StateDictRoundTripsAndRejectsBadValues) {
  train::GradScaler a({.init_scale = 4.0});
  a.load_state_dict({.scale = 256.0, .growth_tracker = 17});
  train::GradScaler b;
  b.load_state_dict(a.state_dict());
  EXPECT_DOUBLE_EQ(b.get_scale(), 256.0);
  EXPECT_EQ(b.state_dict().growth_tracker, 17);
  EXPECT_THROW(b.load_state_dict({.scale = 0.0}), Error);
  EXPECT_THROW(b.load_state_dict({.scale = INFINITY}), Error);
  EXPECT_THROW(train::GradScaler({.backoff_factor = 1.5}), Error);
  EXPECT_THROW(train::GradScaler({.growth_factor = 1.0}), Error);
}

TEST(GradScaler, UnscalingTwiceBeforeUpdateIsAnError) {
  Tensor w = param({1.0f});
  optim::SGD opt({w}, {.lr = 0.1});
  train::GradScaler scaler;
  w.set_grad(from_vector(std::vector<float>{2.0f}));
  scaler.unscale_(opt);
  EXPECT_THROW(scaler.unscale_(opt), Error);
  scaler.update();
  EXPECT_NO_THROW(scaler.unscale_(opt));
}

TEST(GradScaler, DisabledPassesThrough) {
  Tensor w = param({1.0f});
  optim::SGD opt({w}, {.lr = 1.0});
  train::GradScaler scaler({.enabled = false});
  Tensor loss = w.sum();
  EXPECT_TRUE(scaler.scale(loss).same(loss));
  w.set_grad(from_vector(std::vector<float>{INFINITY}));
  EXPECT_TRUE(scaler.step(opt));  // no checks when disabled
}

TEST(MasterWeights, ComputesInBf16AndStepsFloat32Masters) {
  Tensor w = param({1.0f + 1.0f / 512, -3.0f, 0.1f});  // 1 + 2^-9 is not a bfloat16 value
  Tensor idx = from_vector(std::vector<int64_t>{0});
  train::MasterWeights masters({w}, kBFloat16);
  masters.cast_down();
  EXPECT_EQ(w.dtype(), kBFloat16);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(w.to(kFloat32).to_vector<float>()[0], 1.0f);  // rounded to bf16
  // Two backward passes accumulate in float32.
  for (int i = 0; i < 2; ++i) {
    Tensor x = from_vector(std::vector<float>{0.5f, 0.25f, 2.0f}).to(kBFloat16);
    (w * x).sum().backward();
    EXPECT_EQ(w.grad().dtype(), kBFloat16);
    masters.accumulate_grads();
    EXPECT_FALSE(w.grad().defined());
  }
  masters.restore();
  EXPECT_EQ(w.dtype(), kFloat32);
  // The master kept its full-precision value.
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1.0f + 1.0f / 512, -3.0f, 0.1f}));
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{1.0f, 0.5f, 4.0f}));
  // cast_down again, restore without a backward: no gradient.
  masters.cast_down();
  masters.restore();
  EXPECT_FALSE(w.grad().defined());
}

TEST(MasterWeights, LeavesNonFloat32ParametersAlone) {
  Tensor d = from_vector(std::vector<double>{1.0});
  d.requires_grad_(true);
  train::MasterWeights masters({d}, kFloat16);
  masters.cast_down();
  EXPECT_EQ(d.dtype(), kFloat64);
  masters.restore();
  EXPECT_EQ(compute_dtype(train::Precision::BF16), kBFloat16);
  EXPECT_STREQ(train::precision_name(train::Precision::FP16), "fp16");
}

}  // namespace
}  // namespace anvil
