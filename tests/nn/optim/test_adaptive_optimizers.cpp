// RMSprop, Adagrad, Adamax, NAdam, RAdam and Lion against their documented
// updates (torch.optim's pseudo-code; Lion's paper) written out in plain
// doubles, their options, state round trips and bad options.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/cuda_info.h"
#include "nn/optim/adagrad.h"
#include "nn/optim/adam.h"
#include "nn/optim/adamax.h"
#include "nn/optim/lion.h"
#include "nn/optim/nadam.h"
#include "nn/optim/radam.h"
#include "nn/optim/rmsprop.h"
#include "optim_test_util.h"

namespace anvil::nn::optim::test {
namespace {

double sgn(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

struct RefRMSprop {
  double lr, alpha, eps, wd, momentum;
  bool centered, maximize;
  Vec v, ga, buf;
  void step(Vec& p, const Vec& grad) {
    if (v.empty()) v.assign(p.size(), 0), ga.assign(p.size(), 0), buf.assign(p.size(), 0);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = (maximize ? -grad[i] : grad[i]) + wd * p[i];
      v[i] = alpha * v[i] + (1 - alpha) * g * g;
      double avg;
      if (centered) {
        ga[i] = alpha * ga[i] + (1 - alpha) * g;
        avg = std::sqrt(v[i] - ga[i] * ga[i]) + eps;
      } else {
        avg = std::sqrt(v[i]) + eps;
      }
      if (momentum > 0) {
        buf[i] = momentum * buf[i] + g / avg;
        p[i] -= lr * buf[i];
      } else {
        p[i] -= lr * g / avg;
      }
    }
  }
};

TEST(RMSprop, MatchesReference) {
  check_steps<RMSprop>(RMSpropOptions{}, RefRMSprop{1e-2, 0.99, 1e-8, 0, 0, false, false}, 5, 1e-12);
}

TEST(RMSprop, CenteredMomentumWeightDecayMaximize) {
  auto o = RMSpropOptions(0.02).alpha(0.9).eps(1e-6).weight_decay(0.1).momentum(0.8).centered(true).maximize(true);
  check_steps<RMSprop>(o, RefRMSprop{0.02, 0.9, 1e-6, 0.1, 0.8, true, true}, 5, 1e-12);
}

struct RefAdagrad {
  double lr, lr_decay, wd, init, eps;
  bool maximize;
  Vec sum;
  int t = 0;
  void step(Vec& p, const Vec& grad) {
    if (sum.empty()) sum.assign(p.size(), init);
    ++t;
    const double clr = lr / (1 + (t - 1) * lr_decay);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = (maximize ? -grad[i] : grad[i]) + wd * p[i];
      sum[i] += g * g;
      p[i] -= clr * g / (std::sqrt(sum[i]) + eps);
    }
  }
};

TEST(Adagrad, MatchesReference) {
  check_steps<Adagrad>(AdagradOptions{}, RefAdagrad{1e-2, 0, 0, 0, 1e-10, false}, 5, 1e-12);
}

TEST(Adagrad, LrDecayInitialAccumulatorWeightDecay) {
  auto o = AdagradOptions(0.1).lr_decay(0.05).weight_decay(0.01).initial_accumulator_value(0.3).maximize(true);
  check_steps<Adagrad>(o, RefAdagrad{0.1, 0.05, 0.01, 0.3, 1e-10, true}, 6, 1e-12);
}

struct RefAdamax {
  double lr, b1, b2, eps, wd;
  Vec m, u;
  int t = 0;
  void step(Vec& p, const Vec& grad) {
    if (m.empty()) m.assign(p.size(), 0), u.assign(p.size(), 0);
    ++t;
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = grad[i] + wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      u[i] = std::max(b2 * u[i], std::abs(g) + eps);
      p[i] -= lr / (1 - std::pow(b1, t)) * m[i] / u[i];
    }
  }
};

TEST(Adamax, MatchesReference) {
  check_steps<Adamax>(AdamaxOptions{}, RefAdamax{2e-3, 0.9, 0.999, 1e-8, 0}, 5, 1e-12);
  check_steps<Adamax>(AdamaxOptions(0.05).betas({0.8, 0.9}).weight_decay(0.1), RefAdamax{0.05, 0.8, 0.9, 1e-8, 0.1},
                      5, 1e-12);
}

struct RefNAdam {
  double lr, b1, b2, eps, wd, psi;
  bool decoupled;
  Vec m, v;
  double mu_product = 1;
  int t = 0;
  void step(Vec& p, const Vec& grad) {
    if (m.empty()) m.assign(p.size(), 0), v.assign(p.size(), 0);
    ++t;
    const double mu = b1 * (1 - 0.5 * std::pow(0.96, t * psi));
    const double mu_next = b1 * (1 - 0.5 * std::pow(0.96, (t + 1) * psi));
    mu_product *= mu;
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (decoupled) p[i] *= 1 - lr * wd;
      else g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double denom = std::sqrt(v[i] / (1 - std::pow(b2, t))) + eps;
      p[i] -= lr * (1 - mu) / (1 - mu_product) * g / denom;
      p[i] -= lr * mu_next / (1 - mu_product * mu_next) * m[i] / denom;
    }
  }
};

TEST(NAdam, MatchesReference) {
  check_steps<NAdam>(NAdamOptions{}, RefNAdam{2e-3, 0.9, 0.999, 1e-8, 0, 4e-3, false}, 6, 1e-12);
  check_steps<NAdam>(NAdamOptions(0.01).weight_decay(0.1).momentum_decay(0.01),
                     RefNAdam{0.01, 0.9, 0.999, 1e-8, 0.1, 0.01, false}, 5, 1e-12);
  check_steps<NAdam>(NAdamOptions(0.01).weight_decay(0.1).decoupled_weight_decay(true),
                     RefNAdam{0.01, 0.9, 0.999, 1e-8, 0.1, 4e-3, true}, 5, 1e-12);
}

struct RefRAdam {
  double lr, b1, b2, eps, wd;
  bool decoupled;
  Vec m, v;
  int t = 0;
  void step(Vec& p, const Vec& grad) {
    if (m.empty()) m.assign(p.size(), 0), v.assign(p.size(), 0);
    ++t;
    const double rho_inf = 2 / (1 - b2) - 1;
    const double rho_t = rho_inf - 2 * t * std::pow(b2, t) / (1 - std::pow(b2, t));
    for (size_t i = 0; i < p.size(); ++i) {
      double g = grad[i];
      if (decoupled) p[i] *= 1 - lr * wd;
      else g += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double m_hat = m[i] / (1 - std::pow(b1, t));
      if (rho_t > 5) {
        const double r = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
        const double adaptive = std::sqrt(1 - std::pow(b2, t)) / (std::sqrt(v[i]) + eps);
        p[i] -= lr * m_hat * r * adaptive;
      } else {
        p[i] -= lr * m_hat;
      }
    }
  }
};

TEST(RAdam, MatchesReferenceThroughTheRectificationSwitch) {
  // With beta2 = 0.999, rho_t first exceeds 5 at step 6: eight steps cover both branches.
  check_steps<RAdam>(RAdamOptions{}, RefRAdam{1e-3, 0.9, 0.999, 1e-8, 0, false}, 8, 1e-12);
  check_steps<RAdam>(RAdamOptions(0.01).betas({0.8, 0.9}).weight_decay(0.1), RefRAdam{0.01, 0.8, 0.9, 1e-8, 0.1, false},
                     6, 1e-12);
  check_steps<RAdam>(RAdamOptions(0.01).weight_decay(0.1).decoupled_weight_decay(true),
                     RefRAdam{0.01, 0.9, 0.999, 1e-8, 0.1, true}, 8, 1e-12);
}

struct RefLion {
  double lr, b1, b2, wd;
  bool maximize;
  Vec m;
  void step(Vec& p, const Vec& grad) {
    if (m.empty()) m.assign(p.size(), 0);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = maximize ? -grad[i] : grad[i];
      p[i] *= 1 - lr * wd;
      p[i] -= lr * sgn(b1 * m[i] + (1 - b1) * g);
      m[i] = b2 * m[i] + (1 - b2) * g;
    }
  }
};

TEST(Lion, MatchesReference) {
  check_steps<Lion>(LionOptions{}, RefLion{1e-4, 0.9, 0.99, 0, false}, 5, 1e-12);
  check_steps<Lion>(LionOptions(3e-3).betas({0.95, 0.98}).weight_decay(0.5).maximize(true),
                    RefLion{3e-3, 0.95, 0.98, 0.5, true}, 5, 1e-12);
}

TEST(AdaptiveOptimizers, StateRoundTripsThroughTheCheckpointForm) {
  check_state_round_trip<RMSprop>(RMSpropOptions(0.01).momentum(0.9).centered(true));
  check_state_round_trip<Adagrad>(AdagradOptions(0.1).lr_decay(0.01));
  check_state_round_trip<Adamax>(AdamaxOptions(0.01));
  check_state_round_trip<NAdam>(NAdamOptions(0.01));  // mu_product is a host scalar in the state
  check_state_round_trip<RAdam>(RAdamOptions(0.01));
  check_state_round_trip<Lion>(LionOptions(0.001));
  Tensor p = random_param({2});
  NAdam opt({p}, NAdamOptions(0.01));
  set_random_grad(p);
  opt.step();
  const StateDict flat = flatten(opt.state_dict());
  bool found = false;
  for (const auto& [k, t] : flat) found = found || (k == "state.0.scalars.mu_product" && t.item<double>() < 1.0);
  EXPECT_TRUE(found) << "mu_product is saved as state.0.scalars.mu_product";
}

TEST(AdaptiveOptimizers, ParametersWithoutGradientsAreSkipped) {
  Tensor a = random_param({3}), b = random_param({3});
  RMSprop opt({a, b}, RMSpropOptions(0.1));
  const Vec before = values(b);
  set_random_grad(a);
  opt.step();
  EXPECT_EQ(values(b), before);
  EXPECT_EQ(opt.state_of(b), nullptr);
}

TEST(AdaptiveOptimizers, InvalidOptionsNameTheOptimizer) {
  Tensor p = random_param({2});
  auto expect_error = [](auto make, const std::string& needle) {
    try {
      make();
      ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { RMSprop({p}, RMSpropOptions(-1)); }, "RMSprop: invalid learning rate -1");
  expect_error([&] { Adagrad({p}, AdagradOptions(0.1).lr_decay(-0.1)); }, "Adagrad: invalid lr_decay");
  expect_error([&] { Adamax({p}, AdamaxOptions().betas({1.0, 0.9})); }, "Adamax: invalid beta1 1");
  expect_error([&] { NAdam({p}, NAdamOptions().momentum_decay(-1)); }, "NAdam: invalid momentum_decay");
  expect_error([&] { RAdam({p}, RAdamOptions().eps(-1)); }, "RAdam: invalid eps");
  expect_error([&] { Lion({p}, LionOptions().betas({0.9, 1.5})); }, "Lion: invalid beta2 1.5");
  // A state from another optimizer type is refused by name.
  Adam adam({p});
  set_random_grad(p);
  adam.step();
  Lion lion({p});
  expect_error([&] { lion.load_state_dict(adam.state_dict()); }, "unknown hyper-parameter 'eps'");
}

// The updates are tensor ops, so they run on the parameter's device: CUDA
// (on a GPU or the emulated one) against the same double references.
TEST(AdaptiveOptimizersCuda, MatchReferencesOnCuda) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device (no GPU, and not the emulated-GPU build)";
  const Device dev = Device::cuda(0);
  check_steps<RMSprop>(RMSpropOptions(0.01).momentum(0.5).centered(true),
                       RefRMSprop{0.01, 0.99, 1e-8, 0, 0.5, true, false}, 3, 1e-5, kFloat32, dev);
  check_steps<Adagrad>(AdagradOptions(0.1), RefAdagrad{0.1, 0, 0, 0, 1e-10, false}, 3, 1e-5, kFloat32, dev);
  check_steps<Adamax>(AdamaxOptions(0.01), RefAdamax{0.01, 0.9, 0.999, 1e-8, 0}, 3, 1e-5, kFloat32, dev);
  check_steps<NAdam>(NAdamOptions(0.01), RefNAdam{0.01, 0.9, 0.999, 1e-8, 0, 4e-3, false}, 3, 1e-5, kFloat32, dev);
  check_steps<RAdam>(RAdamOptions(0.01).betas({0.9, 0.9}), RefRAdam{0.01, 0.9, 0.9, 1e-8, 0, false}, 7, 1e-5, kFloat32,
                     dev);
  check_steps<Lion>(LionOptions(0.01), RefLion{0.01, 0.9, 0.99, 0, false}, 3, 1e-5, kFloat32, dev);
}

}  // namespace
}  // namespace anvil::nn::optim::test
