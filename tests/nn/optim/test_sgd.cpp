// SGD against its update written out with plain doubles.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/optim/sgd.h"
#include "optim_test_util.h"

namespace anvil::nn::optim::test {
namespace {

// torch.optim.SGD's documented algorithm, one element at a time.
struct ReferenceSGD {
  explicit ReferenceSGD(const SGDOptions& options) : o(options) {}
  SGDOptions o;
  Vec buf;
  bool has_buf = false;

  void step(Vec& p, const Vec& grad) {
    if (o.momentum != 0 && !has_buf) buf.assign(p.size(), 0.0);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = o.maximize ? -grad[i] : grad[i];
      g += o.weight_decay * p[i];
      if (o.momentum != 0) {
        buf[i] = has_buf ? o.momentum * buf[i] + (1 - o.dampening) * g : g;
        g = o.nesterov ? g + o.momentum * buf[i] : buf[i];
      }
      p[i] -= o.lr * g;
    }
    has_buf = true;
  }
};

void check_against_reference(const SGDOptions& options, int steps, DType dtype, double tol) {
  manual_seed(11);
  Tensor w = random_param({3, 4}, dtype);
  Tensor b = random_param({5}, dtype);
  SGD opt({w, b}, options);
  ReferenceSGD ref_w(options), ref_b(options);
  Vec pw = values(w), pb = values(b);
  for (int s = 0; s < steps; ++s) {
    const Vec gw = set_random_grad(w), gb = set_random_grad(b);
    opt.step();
    ref_w.step(pw, gw);
    ref_b.step(pb, gb);
    expect_near(values(w), pw, tol, "w");
    expect_near(values(b), pb, tol, "b");
  }
}

TEST(SGD, PlainStepsMatchReference) { check_against_reference({.lr = 0.1}, 3, kFloat64, 1e-14); }

TEST(SGD, WeightDecayMatchesReference) {
  check_against_reference({.lr = 0.05, .weight_decay = 0.3}, 4, kFloat64, 1e-14);
}

TEST(SGD, MomentumWithDampeningMatchesReference) {
  check_against_reference({.lr = 0.05, .momentum = 0.9, .dampening = 0.25, .weight_decay = 0.01}, 5, kFloat64, 1e-14);
}

TEST(SGD, NesterovMatchesReference) {
  check_against_reference({.lr = 0.05, .momentum = 0.8, .weight_decay = 0.02, .nesterov = true}, 5, kFloat64, 1e-14);
}

TEST(SGD, MaximizeMatchesReference) {
  check_against_reference({.lr = 0.1, .momentum = 0.5, .weight_decay = 0.1, .maximize = true}, 3, kFloat64, 1e-14);
}

TEST(SGD, Float32MatchesReferenceWithinRounding) {
  check_against_reference({.lr = 0.05, .momentum = 0.9, .nesterov = true}, 4, kFloat32, 1e-5);
}

TEST(SGD, FirstMomentumStepUsesTheGradientItself) {
  // buf starts as d (no dampening), so with dampening 0.5 the first step is still lr * g.
  Tensor p = from_vector<double>({1.0, -2.0}, {2});
  p.requires_grad_(true);
  SGD opt({p}, {.lr = 0.5, .momentum = 0.9, .dampening = 0.5});
  p.set_grad(from_vector<double>({0.4, 1.0}, {2}));
  opt.step();
  expect_near(values(p), {1.0 - 0.5 * 0.4, -2.0 - 0.5 * 1.0}, 1e-15);
  // Second step: buf = 0.9 * g + 0.5 * g = 1.4 g.
  opt.step();
  expect_near(values(p), {0.8 - 0.5 * 1.4 * 0.4, -2.5 - 0.5 * 1.4 * 1.0}, 1e-15);
  const ParamState* s = opt.state_of(p);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->step, 2);
  expect_near(values(s->buffers.at("momentum_buffer")), {1.4 * 0.4, 1.4 * 1.0}, 1e-15);
}

TEST(SGD, NesterovNeedsMomentumAndNoDampening) {
  Tensor p = random_param({2});
  EXPECT_THROW(SGD({p}, {.lr = 0.1, .nesterov = true}), Error);
  EXPECT_THROW(SGD({p}, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}), Error);
  try {
    SGD({p}, {.lr = 0.1, .nesterov = true});
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Nesterov momentum requires momentum > 0"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(SGD({p}, {.lr = 0.1, .momentum = 0.9, .nesterov = true}));
}

TEST(SGD, InvalidHyperParametersAreRejected) {
  Tensor p = random_param({2});
  EXPECT_THROW(SGD({p}, {.lr = -0.1}), Error);
  EXPECT_THROW(SGD({p}, {.lr = 0.1, .momentum = -0.5}), Error);
  EXPECT_THROW(SGD({p}, {.lr = 0.1, .weight_decay = -1}), Error);
}

}  // namespace
}  // namespace anvil::nn::optim::test
