// LambdaLR, MultiStepLR, ExponentialLR, SequentialLR, ChainedScheduler and
// ReduceLROnPlateau against their PyTorch definitions, written here.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "nn/optim/lr_scheduler.h"
#include "nn/optim/sgd.h"
#include "optim_test_util.h"

namespace anvil::nn::optim::test {
namespace {

SGD make_sgd(double lr) { return SGD({random_param({2})}, {.lr = lr}); }

template <class Expected> void expect_schedule(LRScheduler& sched, Optimizer& opt, int64_t last, Expected expected) {
  for (int64_t t = 0; t <= last; ++t) {
    if (t > 0) sched.step();
    const double want = expected(t);
    EXPECT_NEAR(sched.get_last_lr().at(0), want, 1e-12 * (1 + std::abs(want))) << "t = " << t;
    EXPECT_DOUBLE_EQ(opt.lr(0), sched.get_last_lr().at(0)) << "t = " << t;
  }
}

TEST(LambdaLR, ScalesTheBaseByTheFunction) {
  SGD opt = make_sgd(0.5);
  LambdaLR sched(opt, [](int64_t t) { return 1.0 / (1.0 + static_cast<double>(t)); });
  expect_schedule(sched, opt, 6, [](int64_t t) { return 0.5 / (1.0 + static_cast<double>(t)); });
}

TEST(LambdaLR, OneFunctionPerGroup) {
  SGD opt({SGD::Group{{random_param({2})}}, SGD::Group{{random_param({2})}, SGDOptions{.lr = 2.0}}}, {.lr = 1.0});
  LambdaLR sched(opt, {[](int64_t t) { return 0.9 * static_cast<double>(t); },
                       [](int64_t t) { return std::pow(0.5, static_cast<double>(t)); }});
  for (int i = 0; i < 3; ++i) sched.step();
  EXPECT_NEAR(opt.lr(0), 1.0 * 0.9 * 3, 1e-12);
  EXPECT_NEAR(opt.lr(1), 2.0 * 0.125, 1e-12);
  EXPECT_THROW(LambdaLR(opt, std::vector<LambdaLR::Lambda>{[](int64_t) { return 1.0; }}), Error);
}

TEST(MultiStepLR, DecaysAtEachMilestone) {
  SGD opt = make_sgd(1.0);
  MultiStepLR sched(opt, {.milestones = {7, 3, 7}, .gamma = 0.5});  // unsorted, 7 twice: decays twice there
  expect_schedule(sched, opt, 10, [](int64_t t) { return t < 3 ? 1.0 : (t < 7 ? 0.5 : 0.125); });
}

TEST(ExponentialLR, DecaysEveryStep) {
  SGD opt = make_sgd(0.3);
  ExponentialLR sched(opt, {.gamma = 0.9});
  expect_schedule(sched, opt, 8, [](int64_t t) { return 0.3 * std::pow(0.9, static_cast<double>(t)); });
}

TEST(SequentialLR, RunsWarmupThenDecayRestartedAtTheMilestone) {
  SGD opt = make_sgd(1.0);
  auto warmup = std::make_shared<LinearWarmupLR>(opt, LinearWarmupLROptions{.warmup_steps = 4, .start_factor = 0.2});
  auto decay = std::make_shared<ExponentialLR>(opt, ExponentialLROptions{.gamma = 0.8});
  // Both children read the optimizer's initial lr (1.0), not the lr the first one set.
  EXPECT_EQ(decay->base_lrs(), std::vector<double>{1.0});
  SequentialLR sched(opt, {warmup, decay}, {4});
  expect_schedule(sched, opt, 9, [](int64_t t) {
    if (t < 4) return 0.2 + 0.8 * static_cast<double>(t) / 4.0;
    return std::pow(0.8, static_cast<double>(t - 4));
  });
  EXPECT_THROW(SequentialLR(opt, {warmup, decay}, {}), Error);
  EXPECT_THROW(SequentialLR(opt, {warmup, decay, decay}, {5, 3}), Error);
  SGD other = make_sgd(1.0);
  auto foreign = std::make_shared<ExponentialLR>(other, ExponentialLROptions{.gamma = 0.5});
  EXPECT_THROW(SequentialLR(opt, {warmup, foreign}, {2}), Error);
}

TEST(ChainedScheduler, MultipliesTheFactors) {
  SGD opt = make_sgd(2.0);
  auto exp = std::make_shared<ExponentialLR>(opt, ExponentialLROptions{.gamma = 0.9});
  auto steps = std::make_shared<MultiStepLR>(opt, MultiStepLROptions{.milestones = {3}, .gamma = 0.1});
  ChainedScheduler sched(opt, {exp, steps});
  expect_schedule(sched, opt, 6,
                  [](int64_t t) { return 2.0 * std::pow(0.9, static_cast<double>(t)) * (t >= 3 ? 0.1 : 1.0); });
}

TEST(ReduceLROnPlateau, ReducesAfterPatienceThenCoolsDown) {
  SGD opt = make_sgd(1.0);
  ReduceLROnPlateau sched(opt, {.factor = 0.5, .patience = 2, .cooldown = 1});
  // Epochs 1-2 improve; 3, 4, 5 do not: the third bad epoch (> patience) halves the lr.
  const std::vector<double> metrics = {1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95};
  // Epoch 6 is in cooldown (its bad epoch does not count); 7, 8, 9 reduce again.
  const std::vector<double> lrs = {1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5, 0.25};
  for (size_t e = 0; e < metrics.size(); ++e) {
    sched.step(metrics[e]);
    EXPECT_DOUBLE_EQ(opt.lr(0), lrs[e]) << "epoch " << e + 1;
    EXPECT_DOUBLE_EQ(sched.get_last_lr()[0], lrs[e]);
  }
  EXPECT_DOUBLE_EQ(sched.best(), 0.9);
}

TEST(ReduceLROnPlateau, ModeMaxThresholdsAndMinLr) {
  SGD opt = make_sgd(1.0);
  using O = ReduceLROnPlateauOptions;
  ReduceLROnPlateau sched(opt, {.mode = O::Mode::Max,
                                .factor = 0.1,
                                .patience = 0,
                                .threshold = 0.05,
                                .threshold_mode = O::ThresholdMode::Abs,
                                .min_lr = {0.05}});
  sched.step(0.5);  // better than -inf
  EXPECT_DOUBLE_EQ(opt.lr(0), 1.0);
  sched.step(0.54);  // not better by more than 0.05: reduced (patience 0)
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.1);
  sched.step(0.56);  // better by 0.06
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.1);
  sched.step(std::nan(""));  // NaN never improves; min_lr holds the floor
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.05);
  sched.step(0.1);
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.05);

  // Rel mode, min: an improvement must beat best * (1 - threshold).
  SGD opt2 = make_sgd(1.0);
  ReduceLROnPlateau rel(opt2, {.factor = 0.5, .patience = 0, .threshold = 0.1});
  rel.step(1.0);
  rel.step(0.95);  // not below 0.9
  EXPECT_DOUBLE_EQ(opt2.lr(0), 0.5);
  rel.step(0.89);
  EXPECT_DOUBLE_EQ(opt2.lr(0), 0.5);
}

TEST(ReduceLROnPlateau, StateResumes) {
  SGD opt = make_sgd(1.0);
  ReduceLROnPlateau a(opt, {.patience = 1});
  a.step(1.0), a.step(2.0);
  SGD opt2 = make_sgd(1.0);
  ReduceLROnPlateau b(opt2, {.patience = 1});
  b.load_state_dict(a.state_dict());
  a.step(3.0), b.step(3.0);
  EXPECT_DOUBLE_EQ(opt.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(opt2.lr(0), 0.1);
  EXPECT_THROW(ReduceLROnPlateau(opt, {.factor = 1.0}), Error);
  EXPECT_THROW(ReduceLROnPlateau(opt, {.min_lr = {0.1, 0.2}}), Error);
}

}  // namespace
}  // namespace anvil::nn::optim::test
