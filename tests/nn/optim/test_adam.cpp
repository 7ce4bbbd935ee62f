// Adam and AdamW against the textbook update written out with plain doubles.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/optim/adam.h"
#include "optim_test_util.h"
#include "optimizer_references.h"

namespace anvil::nn::optim::test {
namespace {

// Kingma & Ba with bias-corrected moments; Adam adds weight decay to the
// gradient, AdamW (Loshchilov & Hutter, as PyTorch) shrinks the parameter by lr * wd.
struct ReferenceAdam {
  ReferenceAdam(double lr_, double beta1_, double beta2_, double eps_, double wd, bool decoupled_,
                bool maximize_ = false)
      : lr(lr_),
        beta1(beta1_),
        beta2(beta2_),
        eps(eps_),
        weight_decay(wd),
        decoupled(decoupled_),
        maximize(maximize_) {}
  double lr, beta1, beta2, eps, weight_decay;
  bool decoupled, maximize;
  Vec m, v;
  int t = 0;

  void step(Vec& p, const Vec& grad) {
    if (t == 0) m.assign(p.size(), 0.0), v.assign(p.size(), 0.0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      double g = maximize ? -grad[i] : grad[i];
      if (decoupled)
        p[i] -= lr * weight_decay * p[i];
      else
        g += weight_decay * p[i];
      m[i] = beta1 * m[i] + (1 - beta1) * g;
      v[i] = beta2 * v[i] + (1 - beta2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(beta1, t));
      const double v_hat = v[i] / (1 - std::pow(beta2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

template <class Optim, class Options>
void check_against_reference(const Options& o, bool decoupled, int steps, DType dtype, double tol) {
  manual_seed(21);
  Tensor w = random_param({4, 3}, dtype);
  Tensor b = random_param({3}, dtype);
  Optim opt({w, b}, o);
  ReferenceAdam ref_w(o.lr, o.beta1, o.beta2, o.eps, o.weight_decay, decoupled, o.maximize);
  ReferenceAdam ref_b = ref_w;
  Vec pw = values(w), pb = values(b);
  for (int s = 0; s < steps; ++s) {
    const Vec gw = set_random_grad(w), gb = set_random_grad(b);
    opt.step();
    ref_w.step(pw, gw);
    ref_b.step(pb, gb);
    expect_near(values(w), pw, tol, "w");
    expect_near(values(b), pb, tol, "b");
  }
  const ParamState* s = opt.state_of(w);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->step, steps);
  expect_near(values(s->buffers.at("exp_avg")), ref_w.m, tol, "exp_avg");
  expect_near(values(s->buffers.at("exp_avg_sq")), ref_w.v, tol, "exp_avg_sq");
}

TEST(Adam, MatchesReferenceWithBiasCorrection) {
  check_against_reference<Adam>(AdamOptions{.lr = 0.01}, false, 5, kFloat64, 1e-12);
}

TEST(Adam, L2WeightDecayGoesThroughTheMoments) {
  check_against_reference<Adam>(AdamOptions{.lr = 0.02, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1},
                                false, 4, kFloat64, 1e-12);
}

TEST(Adam, MaximizeMatchesReference) {
  check_against_reference<Adam>(AdamOptions{.lr = 0.01, .weight_decay = 0.05, .maximize = true}, false, 3, kFloat64,
                                1e-12);
}

TEST(AdamW, DecoupledWeightDecayMatchesReference) {
  check_against_reference<AdamW>(AdamWOptions{.lr = 0.01, .weight_decay = 0.1}, true, 5, kFloat64, 1e-12);
}

TEST(AdamW, Float32MatchesReferenceWithinRounding) {
  check_against_reference<AdamW>(AdamWOptions{.lr = 0.003}, true, 4, kFloat32, 1e-5);
}

TEST(AdamW, DefaultsFollowPyTorch) {
  AdamW adamw({random_param({2})});
  Adam adam({random_param({2})});
  EXPECT_DOUBLE_EQ(adamw.defaults().weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(adam.defaults().weight_decay, 0.0);
  EXPECT_DOUBLE_EQ(adamw.lr(), 1e-3);
  EXPECT_DOUBLE_EQ(adam.defaults().beta1, 0.9);
  EXPECT_DOUBLE_EQ(adam.defaults().beta2, 0.999);
  EXPECT_DOUBLE_EQ(adam.defaults().eps, 1e-8);
}

TEST(Adam, FirstStepMovesEachElementByAboutLr) {
  // With bias correction, m_hat / sqrt(v_hat) = g / |g| on step 1: every
  // element moves by lr against its gradient's sign, whatever the scale.
  Tensor p = from_vector<double>({0.5, -1.0, 2.0}, {3});
  p.requires_grad_(true);
  Adam opt({p}, {.lr = 0.1, .eps = 0.0});
  p.set_grad(from_vector<double>({1e-3, -50.0, 7.0}, {3}));
  opt.step();
  expect_near(values(p), {0.4, -0.9, 1.9}, 1e-14);
}

TEST(Adam, ParametersWithFewerStepsUseTheirOwnBiasCorrection) {
  // b gets no gradient on the first step: it is skipped, and later its step
  // count (and bias correction) lags w's by one.
  manual_seed(5);
  Tensor w = random_param({3}), b = random_param({2});
  Adam opt({w, b}, {.lr = 0.05});
  ReferenceAdam ref_w(0.05, 0.9, 0.999, 1e-8, 0.0, false), ref_b = ref_w;
  Vec pw = values(w), pb = values(b);
  ref_w.step(pw, set_random_grad(w));
  opt.step();
  expect_near(values(b), pb, 0.0, "b untouched");
  EXPECT_EQ(opt.state_of(b), nullptr);
  for (int s = 0; s < 2; ++s) {
    ref_w.step(pw, set_random_grad(w));
    ref_b.step(pb, set_random_grad(b));
    opt.step();
  }
  expect_near(values(w), pw, 1e-12, "w");
  expect_near(values(b), pb, 1e-12, "b");
  EXPECT_EQ(opt.state_of(w)->step, 3);
  EXPECT_EQ(opt.state_of(b)->step, 2);
}

// beta2 0.5 lets v fall quickly after the large first gradients, so v_max
// and v part ways within a few steps and the maximum decides the update.
TEST(Adam, AmsgradMatchesReference) {
  check_steps<Adam>(AdamOptions(0.01).betas({0.9, 0.5}).amsgrad(true),
                    RefAMSGrad{0.01, 0.9, 0.5, 1e-8, 0, false, false}, 6, 1e-12);
  check_steps<Adam>(AdamOptions(0.01).weight_decay(0.1).maximize(true).amsgrad(true),
                    RefAMSGrad{0.01, 0.9, 0.999, 1e-8, 0.1, false, true}, 4, 1e-12);
  check_steps<AdamW>(AdamWOptions(0.01).betas({0.8, 0.5}).amsgrad(true),
                     RefAMSGrad{0.01, 0.8, 0.5, 1e-8, 1e-2, true, false}, 6, 1e-12);
}

TEST(Adam, AmsgradKeepsTheMaximumOfTheSecondMoments) {
  Tensor p = random_param({5});
  Adam opt({p}, AdamOptions(0.01).betas({0.9, 0.5}).amsgrad(true));
  Tensor grad = p.detach().clone().fill_(4.0);
  p.set_grad(grad);
  opt.step();
  p.set_grad(grad.clone().fill_(0.1));  // v shrinks, its maximum must not
  opt.step();
  const ParamState* s = opt.state_of(p);
  ASSERT_NE(s, nullptr);
  const Vec v = values(s->buffers.at("exp_avg_sq")), v_max = values(s->buffers.at("max_exp_avg_sq"));
  for (size_t i = 0; i < v.size(); ++i) {
    EXPECT_NEAR(v_max[i], 0.5 * 16.0, 1e-12);  // (1 - beta2) * 4^2 after the first step
    EXPECT_NEAR(v[i], 0.5 * 8.0 + 0.5 * 0.01, 1e-12);  // then beta2 * v + (1 - beta2) * 0.1^2
  }
  check_state_round_trip<Adam>(AdamOptions(0.01).amsgrad(true));
}

TEST(Adam, InvalidHyperParametersAreRejected) {
  Tensor p = random_param({2});
  EXPECT_THROW(Adam({p}, {.lr = -1}), Error);
  EXPECT_THROW(Adam({p}, {.beta1 = 1.0}), Error);
  EXPECT_THROW(AdamW({p}, {.beta2 = -0.1}), Error);
  EXPECT_THROW(AdamW({p}, {.eps = -1e-8}), Error);
  EXPECT_THROW(AdamW({p}, {.weight_decay = -0.01}), Error);
}

}  // namespace
}  // namespace anvil::nn::optim::test
