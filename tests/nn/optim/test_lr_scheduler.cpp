// LR schedules against their closed forms, written here independently.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "nn/optim/lr_scheduler.h"
#include "nn/optim/sgd.h"
#include "optim_test_util.h"

namespace anvil::nn::optim::test {
namespace {

constexpr double kPi = std::numbers::pi;

SGD make_sgd(double lr) { return SGD({random_param({2})}, {.lr = lr}); }

// Steps the scheduler to t = 0..last and checks both get_last_lr and the optimizer.
template <class Expected> void expect_schedule(LRScheduler& sched, Optimizer& opt, int64_t last, Expected expected) {
  for (int64_t t = 0; t <= last; ++t) {
    if (t > 0) sched.step();
    ASSERT_EQ(sched.last_step(), t);
    const double want = expected(t);
    EXPECT_NEAR(sched.get_last_lr().at(0), want, 1e-12 * (1 + std::abs(want))) << "t = " << t;
    EXPECT_DOUBLE_EQ(opt.lr(0), sched.get_last_lr().at(0)) << "t = " << t;
  }
}

TEST(StepLR, DecaysEveryStepSize) {
  SGD opt = make_sgd(0.8);
  StepLR sched(opt, {.step_size = 3, .gamma = 0.5});
  expect_schedule(sched, opt, 9, [](int64_t t) { return t < 3 ? 0.8 : t < 6 ? 0.4 : t < 9 ? 0.2 : 0.1; });
}

TEST(StepLR, EachGroupDecaysFromItsOwnBase) {
  SGD opt({SGD::Group{{random_param({2})}}, ParamGroup{std::vector<Tensor>{random_param({2})}, SGDOptions{.lr = 0.3}}},
          {.lr = 1.0});
  StepLR sched(opt, {.step_size = 2, .gamma = 0.1});
  sched.step();
  sched.step();
  EXPECT_NEAR(opt.lr(0), 0.1, 1e-15);
  EXPECT_NEAR(opt.lr(1), 0.03, 1e-15);
  EXPECT_EQ(sched.base_lrs(), (std::vector<double>{1.0, 0.3}));
}

TEST(LinearWarmupLR, RampsThenHolds) {
  SGD opt = make_sgd(0.4);
  LinearWarmupLR sched(opt, {.warmup_steps = 4});
  expect_schedule(sched, opt, 8, [](int64_t t) { return t < 4 ? 0.4 * t / 4.0 : 0.4; });
}

TEST(LinearWarmupLR, StartFactorLikePyTorchLinearLR) {
  SGD opt = make_sgd(1.0);
  LinearWarmupLR sched(opt, {.warmup_steps = 5, .start_factor = 0.5});
  // LinearLR(start_factor=0.5, end_factor=1, total_iters=5): 0.5, 0.6, ..., 1.0
  expect_schedule(sched, opt, 7, [](int64_t t) { return t < 5 ? 0.5 + 0.1 * t : 1.0; });
}

TEST(CosineAnnealingLR, WarmupThenCosineDownToMinLr) {
  SGD opt = make_sgd(1.0);
  CosineAnnealingLR sched(opt, {.total_steps = 110, .warmup_steps = 10, .min_lr = 0.1});
  expect_schedule(sched, opt, 130, [](int64_t t) {
    if (t <= 10) return t / 10.0;
    if (t >= 110) return 0.1;
    const double angle = kPi * (t - 10) / 100.0;
    return 0.1 + 0.9 * (0.5 + 0.5 * std::cos(angle));
  });
  EXPECT_DOUBLE_EQ(sched.lr_at(10, 0), 1.0);  // warmup end: the base lr
  EXPECT_NEAR(sched.lr_at(60, 0), 0.55, 1e-15);  // half way: the mean of base and min
  EXPECT_DOUBLE_EQ(sched.lr_at(110, 0), 0.1);  // the end: min_lr
}

TEST(CosineAnnealingLR, WithoutWarmupIsPyTorchCosineAnnealingLR) {
  // PyTorch's recursive form: eta_t = eta_min + (eta_{t-1} - eta_min) * (1 + cos(pi t/T)) / (1 + cos(pi (t-1)/T))
  SGD opt = make_sgd(0.5);
  CosineAnnealingLR sched(opt, {.total_steps = 20, .min_lr = 0.01});
  double eta = 0.5;
  for (int t = 1; t <= 19; ++t) {
    eta = 0.01 + (eta - 0.01) * (1 + std::cos(kPi * t / 20)) / (1 + std::cos(kPi * (t - 1) / 20));
    sched.step();
    EXPECT_NEAR(opt.lr(), eta, 1e-12) << "t = " << t;
  }
}

// OneCycleLR(max_lr=1, total_steps=100, pct_start=0.3): phase 1 ends at
// t = 29 on max_lr, phase 2 ends at t = 99 on max_lr / 25 / 1e4.
double one_cycle_expected(int64_t t) {
  const double initial = 1.0 / 25.0, min_lr = initial / 1e4;
  if (t <= 29) return initial + (1.0 - initial) * (1 - std::cos(kPi * t / 29.0)) / 2;
  const double pct = (t - 29) / 70.0;
  return min_lr + (1.0 - min_lr) * (1 + std::cos(kPi * pct)) / 2;
}

TEST(OneCycleLR, PeaksAtPctStartAndEndsAtMin) {
  SGD opt = make_sgd(123.0);  // ignored: OneCycle derives its lrs from max_lr
  OneCycleLR sched(opt, {.max_lr = 1.0, .total_steps = 100});
  EXPECT_NEAR(opt.lr(), 0.04, 1e-16);
  expect_schedule(sched, opt, 100, one_cycle_expected);
  EXPECT_NEAR(sched.lr_at(29, 0), 1.0, 1e-15);
  EXPECT_NEAR(sched.lr_at(99, 0), 4e-6, 1e-18);
}

TEST(OneCycleLR, SteppingPastTotalIsAnErrorThatChangesNothing) {
  SGD opt = make_sgd(0.1);
  OneCycleLR sched(opt, {.max_lr = 1.0, .total_steps = 10});
  for (int i = 0; i < 10; ++i) sched.step();
  const double lr = opt.lr();
  try {
    sched.step();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("total_steps = 10"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sched.last_step(), 10);
  EXPECT_DOUBLE_EQ(opt.lr(), lr);
}

TEST(OneCycleLR, ThreePhaseReturnsToInitialBeforeAnnihilation) {
  SGD opt = make_sgd(0.1);
  OneCycleLR sched(opt, {.max_lr = 2.0, .total_steps = 100, .pct_start = 0.25, .three_phase = true});
  EXPECT_NEAR(sched.lr_at(0, 0), 0.08, 1e-16);
  EXPECT_NEAR(sched.lr_at(24, 0), 2.0, 1e-15);  // 0.25 * 100 - 1
  EXPECT_NEAR(sched.lr_at(48, 0), 0.08, 1e-16);  // 2 * 0.25 * 100 - 2
  EXPECT_NEAR(sched.lr_at(99, 0), 0.08 / 1e4, 1e-18);
  EXPECT_NEAR(sched.lr_at(36, 0), (2.0 + 0.08) / 2, 1e-12);  // half way down
}

TEST(LRScheduler, StateDictResumes) {
  SGD opt = make_sgd(1.0);
  CosineAnnealingLR sched(opt, {.total_steps = 50, .warmup_steps = 5, .min_lr = 0.01});
  for (int i = 0; i < 7; ++i) sched.step();
  const SchedulerState st = sched.state_dict();
  EXPECT_EQ(st.last_step, 7);
  EXPECT_EQ(st.base_lrs, std::vector<double>{1.0});

  SGD opt2 = make_sgd(5.0);
  CosineAnnealingLR sched2(opt2, {.total_steps = 50, .warmup_steps = 5, .min_lr = 0.01});
  sched2.load_state_dict(st);
  EXPECT_EQ(sched2.get_last_lr(), sched.get_last_lr());
  EXPECT_DOUBLE_EQ(opt2.lr(), opt.lr());
  sched.step();
  sched2.step();
  EXPECT_DOUBLE_EQ(opt2.lr(), opt.lr());

  SGD two_groups({SGD::Group{{random_param({2})}}, SGD::Group{{random_param({2})}}}, {.lr = 1.0});
  StepLR other(two_groups, {.step_size = 1});
  EXPECT_THROW(other.load_state_dict(st), Error);
}

TEST(LRScheduler, InvalidOptionsAreRejected) {
  SGD opt = make_sgd(1.0);
  EXPECT_THROW(StepLR(opt, {.step_size = 0}), Error);
  EXPECT_THROW(CosineAnnealingLR(opt, {.total_steps = 10, .warmup_steps = 10}), Error);
  EXPECT_THROW(OneCycleLR(opt, {.max_lr = 1.0, .total_steps = 10, .pct_start = 1.5}), Error);
  EXPECT_THROW(OneCycleLR(opt, {.max_lr = 0.0, .total_steps = 10}), Error);
  EXPECT_THROW(LinearWarmupLR(opt, {.warmup_steps = -1}), Error);
}

}  // namespace
}  // namespace anvil::nn::optim::test
