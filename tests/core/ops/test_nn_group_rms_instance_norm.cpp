// group_norm, rms_norm (and its fused backward) and instance_norm against
// loops over host values, their gradients against finite differences, and
// bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "kernels/kernel_registry.h"
#include "kernels/ops/norm_kernels.h"
#include "tests/core/ops/nn_test_util.h"
#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::gradcheck;
using testing::randn64;
using testing::uniform64;

// Normalises each consecutive block of `block` values (biased variance).
std::vector<double> normalise_blocks(const std::vector<double>& v, size_t block, double eps) {
  std::vector<double> r(v.size());
  for (size_t s = 0; s < v.size(); s += block) {
    double m = 0, q = 0;
    for (size_t i = s; i < s + block; ++i) m += v[i];
    m /= static_cast<double>(block);
    for (size_t i = s; i < s + block; ++i) q += (v[i] - m) * (v[i] - m);
    const double inv = 1.0 / std::sqrt(q / static_cast<double>(block) + eps);
    for (size_t i = s; i < s + block; ++i) r[i] = (v[i] - m) * inv;
  }
  return r;
}

TEST(NnGroupNorm, MatchesLoopsWithAffine) {
  manual_seed(21);
  Tensor x = randn64({2, 6, 3, 2}), w = randn64({6}), b = randn64({6});
  auto want = normalise_blocks(x.to_vector<double>(), 2 * 3 * 2, 1e-3);  // 3 groups of 2 channels of 3x2
  const auto wv = w.to_vector<double>(), bv = b.to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) {
    const size_t c = (i / 6) % 6;
    want[i] = want[i] * wv[c] + bv[c];
  }
  expect_near_vec(group_norm(x, 3, w, b, 1e-3).to_vector<double>(), want, 1e-10);
  expect_near_vec(group_norm(x, 6).to_vector<double>(), normalise_blocks(x.to_vector<double>(), 6, 1e-5), 1e-10);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return group_norm(t[0], 2, t[1], t[2]); },
                        {randn64({2, 4, 3}), randn64({4}), randn64({4})}));
  expect_error([&] { group_norm(x, 4); }, {"group_norm", "num_groups (4)", "6 channels"});
  expect_error([&] { group_norm(x, 3, randn64({3})); }, {"group_norm", "weight [6]"});
}

TEST(NnRmsNorm, MatchesLoops) {
  manual_seed(22);
  Tensor x = randn64({3, 2, 4}), w = randn64({2, 4});
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>();
  std::vector<double> want(xv.size());
  for (size_t r = 0; r < 3; ++r) {
    double ms = 0;
    for (size_t i = 0; i < 8; ++i) ms += xv[r * 8 + i] * xv[r * 8 + i];
    const double inv = 1 / std::sqrt(ms / 8 + 1e-6);
    for (size_t i = 0; i < 8; ++i) want[r * 8 + i] = xv[r * 8 + i] * inv * wv[i];
  }
  expect_near_vec(rms_norm(x, {2, 4}, w, 1e-6).to_vector<double>(), want, 1e-12);
  // Default eps: the dtype's epsilon (tiny next to these mean squares, so 0 reproduces it closely).
  Tensor unit = rms_norm(x, {4});
  EXPECT_NEAR((unit * unit).mean({-1}).to_vector<double>()[0], 1.0, 1e-12);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return rms_norm(t[0], {3}, t[1], 1e-5); },
                        {randn64({2, 3}), randn64({3})}));
  // Under create_graph the backward is composed from ops, so second derivatives are right too.
  EXPECT_TRUE(testing::gradgradcheck([](const std::vector<Tensor>& t) { return rms_norm(t[0], {3}, {}, 1e-5); },
                                     {randn64({2, 3})}));
  Tensor wconst = randn64({3});
  EXPECT_TRUE(testing::gradgradcheck([&](const std::vector<Tensor>& t) { return rms_norm(t[0], {3}, wconst, 1e-5); },
                                     {randn64({2, 3})}));
  // Half types compute in float and round once.
  Tensor h = randn({4, 8}).to(kFloat16);
  EXPECT_LT(testing::max_abs_diff(rms_norm(h, {8}), rms_norm(h.to(kFloat32), {8}, {}, 0.0009765625)), 2e-3);
  EXPECT_EQ(rms_norm(h, {8}).dtype(), kFloat16);
  EXPECT_EQ(rms_norm(randn64({0, 4}), {4}).shape(), (Shape{0, 4}));
  expect_error([&] { rms_norm(x, {3}); }, {"rms_norm", "normalized_shape", "suffix"});
  expect_error([&] { rms_norm(x, {4}, randn64({3})); }, {"rms_norm", "weight"});
}

// The backend's one-pass backward (plain backward) against the composed one
// (create_graph records the backward, so it takes the op path): float64 to
// rounding, float32 (the vector kernels) to float rounding, odd row lengths,
// a strided input, with and without a weight, and each gradient alone.
TEST(NnRmsNorm, FusedBackwardMatchesTheComposedOne) {
  manual_seed(29);
  for (DType dt : {kFloat64, kFloat32})
    for (int64_t cols : {1, 7, 64, 1000}) {
      for (bool with_weight : {true, false}) {
        Tensor x = (randn64({5, 3, cols}) * 1.5 + 0.25).to(dt).requires_grad_();
        Tensor w = with_weight ? randn64({cols}).to(dt).requires_grad_() : Tensor();
        Tensor g = randn64({5, 3, cols}).to(dt);
        std::vector<Tensor> inputs = {x};
        if (with_weight) inputs.push_back(w);
        auto grads = [&](bool composed) {
          Tensor y = rms_norm(x, {cols}, w, 1e-5);
          return autograd::grad({y}, inputs, {g}, {.retain_graph = false, .create_graph = composed});
        };
        const std::vector<Tensor> fused = grads(false), composed = grads(true);
        const double tol = dt == kFloat64 ? 1e-12 : 2e-5 * std::sqrt(static_cast<double>(cols));
        for (size_t i = 0; i < inputs.size(); ++i) {
          EXPECT_EQ(fused[i].dtype(), dt);
          EXPECT_EQ(fused[i].shape(), inputs[i].shape());
          EXPECT_LT(testing::max_abs_diff(fused[i].detach(), composed[i].detach()), tol)
              << dtype_name(dt) << " cols " << cols << (i ? " grad_weight" : " grad_input");
        }
      }
    }
  // Only the weight's gradient, and a transposed (strided) input.
  Tensor x = randn64({6, 9}), w = randn64({6}).requires_grad_(), g = randn64({9, 6});
  Tensor y = rms_norm(x.t(), {6}, w, 1e-5);
  const Tensor gw = autograd::grad({y}, {w}, {g})[0];
  Tensor r = rsqrt(mean(x.t() * x.t(), {1}, true) + 1e-5);
  expect_near_vec(gw.to_vector<double>(), sum(g * x.t() * r, {0}).to_vector<double>(), 1e-12);
}

TEST(NnInstanceNorm, NormalisesEachInstanceAndUpdatesRunningStats) {
  manual_seed(23);
  Tensor x = randn64({2, 3, 5}), w = randn64({3}), b = randn64({3});
  Tensor rm = randn64({3}), rv = uniform64({3}, 0.5, 2.0);
  const auto rm0 = rm.to_vector<double>(), rv0 = rv.to_vector<double>(), xv = x.to_vector<double>();
  Tensor y = instance_norm(x, rm, rv, w, b, {true, 0.2, 1e-5});
  auto want = normalise_blocks(xv, 5, 1e-5);
  const auto wv = w.to_vector<double>(), bv = b.to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] * wv[(i / 5) % 3] + bv[(i / 5) % 3];
  expect_near_vec(y.to_vector<double>(), want, 1e-6);  // batch_norm keeps its statistics in float32
  // Running stats: the momentum step toward the per-instance mean and
  // unbiased variance, averaged over the batch.
  std::vector<double> want_rm(3), want_rv(3);
  for (size_t c = 0; c < 3; ++c) {
    double mean_sum = 0, var_sum = 0;
    for (size_t n = 0; n < 2; ++n) {
      double m = 0, q = 0;
      for (size_t i = 0; i < 5; ++i) m += xv[(n * 3 + c) * 5 + i];
      m /= 5;
      for (size_t i = 0; i < 5; ++i) q += std::pow(xv[(n * 3 + c) * 5 + i] - m, 2);
      mean_sum += m;
      var_sum += q / 4;
    }
    want_rm[c] = 0.8 * rm0[c] + 0.2 * mean_sum / 2;
    want_rv[c] = 0.8 * rv0[c] + 0.2 * var_sum / 2;
  }
  expect_near_vec(rm.to_vector<double>(), want_rm, 1e-6, "running_mean");
  expect_near_vec(rv.to_vector<double>(), want_rv, 1e-6, "running_var");
  // With use_input_stats off it normalises with the running stats.
  Tensor e = instance_norm(x, rm, rv, {}, {}, {false, 0.1, 1e-5});
  Tensor want_e = (x - rm.view({1, 3, 1})) / (rv.view({1, 3, 1}) + 1e-5).sqrt();
  EXPECT_LT(testing::max_abs_diff(e, want_e), 1e-6);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return instance_norm(t[0], {}, {}, t[1], t[2]); },
                        {randn64({2, 2, 4}), randn64({2}), randn64({2})}));
  expect_error([&] { instance_norm(randn64({2, 3})); }, {"instance_norm", "at least one spatial dim"});
  expect_error([&] { instance_norm(x, {}, {}, {}, {}, {false, 0.1, 1e-5}); }, {"instance_norm", "use_input_stats"});
}

}  // namespace
}  // namespace anvil

// The composed fallback (what a device without the rms_norm kernels runs)
// gives the kernels' values and gradients: the registry's override removes
// both kernels for the scope.
namespace anvil {
namespace {

TEST(RmsNormFallback, TheComposedPathMatchesTheKernels) {
  manual_seed(21);
  for (DType dt : {kFloat32, kFloat64}) {
    const Tensor x0 = randn({6, 5, 33}).to(dt), w0 = randn({5, 33}).to(dt), g = randn({6, 5, 33}).to(dt);
    const auto run = [&](bool fused) {
      std::optional<kernel_registry::ScopedOverride<kernel::RmsNorm>> no_forward;
      std::optional<kernel_registry::ScopedOverride<kernel::RmsNormBackward>> no_backward;
      if (!fused) {
        no_forward.emplace(DeviceType::CPU, nullptr);
        no_backward.emplace(DeviceType::CPU, nullptr);
      }
      Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
      Tensor y = rms_norm(x, {5, 33}, w);
      y.backward(g);
      return std::vector<Tensor>{y.detach(), x.grad(), w.grad()};
    };
    const auto fused = run(true), composed = run(false);
    const double bound = dt == kFloat64 ? 1e-12 : 2e-5;
    for (size_t i = 0; i < fused.size(); ++i)
      EXPECT_LT((fused[i] - composed[i]).abs().max().item<double>(), bound) << dtype_name(dt) << " output " << i;
  }
}

}  // namespace
}  // namespace anvil
