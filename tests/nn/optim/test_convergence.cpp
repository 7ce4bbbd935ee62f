// End to end: each optimizer, driven by autograd, minimizes an
// ill-conditioned quadratic sum_i c_i (x_i - t_i)^2.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "nn/optim/optim.h"
#include "optim_test_util.h"

namespace anvil::nn::optim::test {
namespace {

struct Quadratic {
  Tensor scale, target;
  Tensor loss(const Tensor& x) const { return sum(scale * square(x - target)); }
};

Quadratic make_quadratic(int64_t n) {
  manual_seed(41);
  return {rand({n}, kFloat64) * 1.5 + 0.5, randn({n}, kFloat64) * 2.0};
}

// Runs `steps` updates from x = 0 and returns the final distance to the minimum.
double minimize(const std::function<std::unique_ptr<Optimizer>(Tensor)>& make, int steps, bool cosine = false) {
  const Quadratic q = make_quadratic(16);
  Tensor x = zeros({16}, kFloat64);
  x.requires_grad_(true);
  std::unique_ptr<Optimizer> opt = make(x);
  std::unique_ptr<LRScheduler> sched;
  if (cosine) sched = std::make_unique<CosineAnnealingLR>(*opt, CosineAnnealingLROptions{.total_steps = steps});
  const double start_loss = q.loss(x).item<double>();
  for (int s = 0; s < steps; ++s) {
    opt->zero_grad();
    q.loss(x).backward();
    opt->step();
    if (sched) sched->step();
  }
  EXPECT_LT(q.loss(x).item<double>(), 1e-6 * start_loss);
  NoGradGuard no_grad;
  return amax(abs(x.detach() - q.target)).item<double>();
}

TEST(Convergence, SGD) {
  EXPECT_LT(
      minimize([](Tensor x) { return std::make_unique<SGD>(std::vector<Tensor>{x}, SGDOptions{.lr = 0.1}); }, 200),
      1e-6);
}

TEST(Convergence, SGDNesterovMomentum) {
  EXPECT_LT(minimize(
                [](Tensor x) {
                  return std::make_unique<SGD>(std::vector<Tensor>{x},
                                               SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true});
                },
                400),
            1e-6);
}

TEST(Convergence, Adam) {
  EXPECT_LT(minimize([](Tensor x) { return std::make_unique<Adam>(std::vector<Tensor>{x}, AdamOptions{.lr = 0.1}); },
                     1000, /*cosine=*/true),
            1e-3);
}

TEST(Convergence, AdamWWithoutDecayReachesTheMinimum) {
  EXPECT_LT(minimize(
                [](Tensor x) {
                  return std::make_unique<AdamW>(std::vector<Tensor>{x}, AdamWOptions{.lr = 0.1, .weight_decay = 0.0});
                },
                1000, /*cosine=*/true),
            1e-3);
}

TEST(Convergence, ClippedSGDStillConverges) {
  const Quadratic q = make_quadratic(16);
  Tensor x = zeros({16}, kFloat64);
  x.requires_grad_(true);
  SGD opt({x}, {.lr = 0.1, .momentum = 0.5});
  for (int s = 0; s < 300; ++s) {
    opt.zero_grad();
    q.loss(x).backward();
    clip_grad_norm_({x}, 1.0);  // early steps are clipped (the initial gradient norm is ~10)
    opt.step();
  }
  NoGradGuard no_grad;
  EXPECT_LT(amax(abs(x.detach() - q.target)).item<double>(), 1e-6);
}

}  // namespace
}  // namespace anvil::nn::optim::test
