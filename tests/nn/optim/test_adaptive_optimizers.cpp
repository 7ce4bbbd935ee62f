// RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam and Lion against their documented
// updates (torch.optim's pseudo-code; Lion's paper) written out in plain
// doubles, their options, state round trips and bad options.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/optim/adadelta.h"
#include "nn/optim/adagrad.h"
#include "nn/optim/adam.h"
#include "nn/optim/adamax.h"
#include "nn/optim/lion.h"
#include "nn/optim/nadam.h"
#include "nn/optim/radam.h"
#include "nn/optim/rmsprop.h"
#include "optim_test_util.h"
#include "optimizer_references.h"

namespace anvil::nn::optim::test {
namespace {

TEST(RMSprop, MatchesReference) {
  check_steps<RMSprop>(RMSpropOptions{}, RefRMSprop{1e-2, 0.99, 1e-8, 0, 0, false, false}, 5, 1e-12);
}

TEST(RMSprop, CenteredMomentumWeightDecayMaximize) {
  auto o = RMSpropOptions(0.02).alpha(0.9).eps(1e-6).weight_decay(0.1).momentum(0.8).centered(true).maximize(true);
  check_steps<RMSprop>(o, RefRMSprop{0.02, 0.9, 1e-6, 0.1, 0.8, true, true}, 5, 1e-12);
}

TEST(Adagrad, MatchesReference) {
  check_steps<Adagrad>(AdagradOptions{}, RefAdagrad{1e-2, 0, 0, 0, 1e-10, false}, 5, 1e-12);
}

TEST(Adagrad, LrDecayInitialAccumulatorWeightDecay) {
  auto o = AdagradOptions(0.1).lr_decay(0.05).weight_decay(0.01).initial_accumulator_value(0.3).maximize(true);
  check_steps<Adagrad>(o, RefAdagrad{0.1, 0.05, 0.01, 0.3, 1e-10, true}, 6, 1e-12);
}

TEST(Adadelta, MatchesReference) {
  check_steps<Adadelta>(AdadeltaOptions{}, RefAdadelta{1.0, 0.9, 1e-6, 0, false}, 6, 1e-12);
}

TEST(Adadelta, RhoEpsLrWeightDecayMaximize) {
  auto o = AdadeltaOptions(0.5).rho(0.7).eps(1e-3).weight_decay(0.1).maximize(true);
  check_steps<Adadelta>(o, RefAdadelta{0.5, 0.7, 1e-3, 0.1, true}, 6, 1e-12);
  // rho 0: v and u hold only the last step's g^2 and delta^2.
  check_steps<Adadelta>(AdadeltaOptions(2.0).rho(0.0), RefAdadelta{2.0, 0.0, 1e-6, 0, false}, 4, 1e-12);
}

// The first step moves each element by lr * sqrt(eps / (eps + (1 - rho) g^2)) * |g|,
// not by lr * |g|: Adadelta's scale-free start, computed here by hand.
TEST(Adadelta, FirstStepIsTheUnitsCorrectedGradient) {
  Tensor p = from_vector<double>({1.0, -2.0}).requires_grad_(true);
  Adadelta opt({p}, AdadeltaOptions(1.0).rho(0.9).eps(1e-6));
  p.set_grad(from_vector<double>({3.0, -0.5}));
  opt.step();
  const double d0 = std::sqrt(1e-6 / (1e-6 + 0.1 * 9.0)) * 3.0, d1 = std::sqrt(1e-6 / (1e-6 + 0.1 * 0.25)) * -0.5;
  expect_near(values(p), {1.0 - d0, -2.0 - d1}, 1e-14, "p");
  const ParamState* s = opt.state_of(p);
  ASSERT_NE(s, nullptr);
  expect_near(values(s->buffers.at("square_avg")), {0.9, 0.025}, 1e-14, "square_avg");
  expect_near(values(s->buffers.at("acc_delta")), {0.1 * d0 * d0, 0.1 * d1 * d1}, 1e-14, "acc_delta");
}

TEST(Adamax, MatchesReference) {
  check_steps<Adamax>(AdamaxOptions{}, RefAdamax{2e-3, 0.9, 0.999, 1e-8, 0}, 5, 1e-12);
  check_steps<Adamax>(AdamaxOptions(0.05).betas({0.8, 0.9}).weight_decay(0.1), RefAdamax{0.05, 0.8, 0.9, 1e-8, 0.1}, 5,
                      1e-12);
}

TEST(NAdam, MatchesReference) {
  check_steps<NAdam>(NAdamOptions{}, RefNAdam{2e-3, 0.9, 0.999, 1e-8, 0, 4e-3, false}, 6, 1e-12);
  check_steps<NAdam>(NAdamOptions(0.01).weight_decay(0.1).momentum_decay(0.01),
                     RefNAdam{0.01, 0.9, 0.999, 1e-8, 0.1, 0.01, false}, 5, 1e-12);
  check_steps<NAdam>(NAdamOptions(0.01).weight_decay(0.1).decoupled_weight_decay(true),
                     RefNAdam{0.01, 0.9, 0.999, 1e-8, 0.1, 4e-3, true}, 5, 1e-12);
}

TEST(RAdam, MatchesReferenceThroughTheRectificationSwitch) {
  // With beta2 = 0.999, rho_t first exceeds 5 at step 6: eight steps cover both branches.
  check_steps<RAdam>(RAdamOptions{}, RefRAdam{1e-3, 0.9, 0.999, 1e-8, 0, false}, 8, 1e-12);
  check_steps<RAdam>(RAdamOptions(0.01).betas({0.8, 0.9}).weight_decay(0.1), RefRAdam{0.01, 0.8, 0.9, 1e-8, 0.1, false},
                     6, 1e-12);
  check_steps<RAdam>(RAdamOptions(0.01).weight_decay(0.1).decoupled_weight_decay(true),
                     RefRAdam{0.01, 0.9, 0.999, 1e-8, 0.1, true}, 8, 1e-12);
}

TEST(Lion, MatchesReference) {
  check_steps<Lion>(LionOptions{}, RefLion{1e-4, 0.9, 0.99, 0, false}, 5, 1e-12);
  check_steps<Lion>(LionOptions(3e-3).betas({0.95, 0.98}).weight_decay(0.5).maximize(true),
                    RefLion{3e-3, 0.95, 0.98, 0.5, true}, 5, 1e-12);
}

TEST(AdaptiveOptimizers, StateRoundTripsThroughTheCheckpointForm) {
  check_state_round_trip<RMSprop>(RMSpropOptions(0.01).momentum(0.9).centered(true));
  check_state_round_trip<Adagrad>(AdagradOptions(0.1).lr_decay(0.01));
  check_state_round_trip<Adadelta>(AdadeltaOptions(0.5).rho(0.8).weight_decay(0.01));
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
  expect_error([&] { Adadelta({p}, AdadeltaOptions().rho(1.5)); }, "Adadelta: invalid rho 1.5");
  expect_error([&] { Adadelta({p}, AdadeltaOptions(-0.1)); }, "Adadelta: invalid learning rate -0.1");
  expect_error([&] { Adadelta({p}, AdadeltaOptions().weight_decay(-1)); }, "Adadelta: invalid weight_decay");
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

}  // namespace
}  // namespace anvil::nn::optim::test
