#include "nn/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

namespace anvil::nn::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  if (optimizer.initial_lrs().size() != optimizer.num_param_groups()) {
    std::vector<double> lrs;
    for (size_t g = 0; g < optimizer.num_param_groups(); ++g) lrs.push_back(optimizer.lr(g));
    optimizer.set_initial_lrs(std::move(lrs));
  }
  base_lrs_ = optimizer.initial_lrs();
}

void LRScheduler::apply_at(int64_t t) {
  // Every lr first, so an error (e.g. OneCycleLR stepped too far) changes nothing.
  std::vector<double> lrs;
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) lrs.push_back(lr_at(t, g));
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_.set_lr(g, lrs[g]);
  last_lrs_ = std::move(lrs);
  last_step_ = t;
}

void LRScheduler::step() { apply_at(last_step_ + 1); }

void LRScheduler::load_state_dict(const SchedulerState& state) {
  ANVIL_CHECK(state.base_lrs.size() == optimizer_.num_param_groups(), "LRScheduler.load_state_dict: the state has ",
              state.base_lrs.size(), " base lrs but the optimizer has ", optimizer_.num_param_groups(),
              " parameter groups");
  ANVIL_CHECK(state.last_step >= 0, "LRScheduler.load_state_dict: negative step count ", state.last_step);
  std::vector<double> previous = std::exchange(base_lrs_, state.base_lrs);
  try {
    apply_at(state.last_step);
  } catch (...) {
    base_lrs_ = std::move(previous);
    throw;
  }
}

// ------------------------------------------------------------------ StepLR

StepLR::StepLR(Optimizer& optimizer, StepLROptions options) : LRScheduler(optimizer), o_(options) {
  ANVIL_CHECK(o_.step_size > 0, "StepLR: step_size must be > 0, got ", o_.step_size);
  start();
}

double StepLR::lr_at(int64_t t, size_t group) const {
  return base_lrs().at(group) * std::pow(o_.gamma, static_cast<double>(t / o_.step_size));
}

// ---------------------------------------------------------- LinearWarmupLR

namespace {

double warmup_factor(int64_t t, int64_t warmup_steps, double start_factor) {
  if (t >= warmup_steps) return 1.0;
  return start_factor + (1.0 - start_factor) * static_cast<double>(t) / static_cast<double>(warmup_steps);
}

}  // namespace

LinearWarmupLR::LinearWarmupLR(Optimizer& optimizer, LinearWarmupLROptions options)
    : LRScheduler(optimizer), o_(options) {
  ANVIL_CHECK(o_.warmup_steps >= 0, "LinearWarmupLR: warmup_steps must be >= 0, got ", o_.warmup_steps);
  ANVIL_CHECK(o_.start_factor >= 0 && o_.start_factor <= 1, "LinearWarmupLR: start_factor must be in [0, 1], got ",
              o_.start_factor);
  start();
}

double LinearWarmupLR::lr_at(int64_t t, size_t group) const {
  return base_lrs().at(group) * warmup_factor(t, o_.warmup_steps, o_.start_factor);
}

// ------------------------------------------------------- CosineAnnealingLR

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, CosineAnnealingLROptions options)
    : LRScheduler(optimizer), o_(options) {
  ANVIL_CHECK(o_.warmup_steps >= 0, "CosineAnnealingLR: warmup_steps must be >= 0, got ", o_.warmup_steps);
  ANVIL_CHECK(o_.total_steps > o_.warmup_steps, "CosineAnnealingLR: total_steps (", o_.total_steps,
              ") must exceed warmup_steps (", o_.warmup_steps, ")");
  ANVIL_CHECK(o_.min_lr >= 0, "CosineAnnealingLR: min_lr must be >= 0, got ", o_.min_lr);
  ANVIL_CHECK(o_.warmup_start_factor >= 0 && o_.warmup_start_factor <= 1,
              "CosineAnnealingLR: warmup_start_factor must be in [0, 1], got ", o_.warmup_start_factor);
  start();
}

double CosineAnnealingLR::lr_at(int64_t t, size_t group) const {
  const double base = base_lrs().at(group);
  if (t < o_.warmup_steps) return base * warmup_factor(t, o_.warmup_steps, o_.warmup_start_factor);
  const double progress =
      std::min(1.0, static_cast<double>(t - o_.warmup_steps) / static_cast<double>(o_.total_steps - o_.warmup_steps));
  if (progress >= 1.0) return o_.min_lr;
  return o_.min_lr + (base - o_.min_lr) * (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
}

// -------------------------------------------------------------- OneCycleLR

OneCycleLR::OneCycleLR(Optimizer& optimizer, OneCycleLROptions options) : LRScheduler(optimizer), o_(options) {
  ANVIL_CHECK(o_.total_steps > 0, "OneCycleLR: total_steps must be > 0, got ", o_.total_steps);
  ANVIL_CHECK(o_.max_lr > 0, "OneCycleLR: max_lr must be > 0, got ", o_.max_lr);
  ANVIL_CHECK(o_.pct_start >= 0 && o_.pct_start <= 1, "OneCycleLR: pct_start must be in [0, 1], got ", o_.pct_start);
  ANVIL_CHECK(o_.div_factor > 0 && o_.final_div_factor > 0,
              "OneCycleLR: div_factor and final_div_factor must be > 0, got ", o_.div_factor, " and ",
              o_.final_div_factor);
  const double initial = o_.max_lr / o_.div_factor, min_lr = initial / o_.final_div_factor;
  const double up_end = o_.pct_start * static_cast<double>(o_.total_steps) - 1.0;
  const double last = static_cast<double>(o_.total_steps) - 1.0;
  if (o_.three_phase) {
    phases_ = {{up_end, initial, o_.max_lr},
               {2.0 * o_.pct_start * o_.total_steps - 2.0, o_.max_lr, initial},
               {last, initial, min_lr}};
  } else {
    phases_ = {{up_end, initial, o_.max_lr}, {last, o_.max_lr, min_lr}};
  }
  start();
}

double OneCycleLR::lr_at(int64_t t, size_t /*group*/) const {
  ANVIL_CHECK(t <= o_.total_steps, "OneCycleLR: tried to step ", t,
              " times; the schedule has total_steps = ", o_.total_steps);
  const double step = static_cast<double>(t);
  double start_step = 0.0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& ph = phases_[i];
    if (step <= ph.end_step || i + 1 == phases_.size()) {
      const double pct = (step - start_step) / (ph.end_step - start_step);
      // PyTorch's _annealing_cos: from start_lr to end_lr as pct goes 0 -> 1.
      return ph.end_lr + (ph.start_lr - ph.end_lr) / 2.0 * (std::cos(std::numbers::pi * pct) + 1.0);
    }
    start_step = ph.end_step;
  }
  return phases_.back().end_lr;  // unreachable: the last phase always matches
}

// ---------------------------------------------------------------- LambdaLR

LambdaLR::LambdaLR(Optimizer& optimizer, Lambda lr_lambda)
    : LambdaLR(optimizer, std::vector<Lambda>(optimizer.num_param_groups(), lr_lambda)) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas)
    : LRScheduler(optimizer), lambdas_(std::move(lr_lambdas)) {
  ANVIL_CHECK(lambdas_.size() == optimizer.num_param_groups(), "LambdaLR: expected ", optimizer.num_param_groups(),
              " lr_lambdas (one per parameter group), got ", lambdas_.size());
  for (size_t g = 0; g < lambdas_.size(); ++g)
    ANVIL_CHECK(lambdas_[g] != nullptr, "LambdaLR: lr_lambda for group ", g, " is empty");
  start();
}

double LambdaLR::lr_at(int64_t t, size_t group) const { return base_lrs().at(group) * lambdas_.at(group)(t); }

// ------------------------------------------------------------- MultiStepLR

MultiStepLR::MultiStepLR(Optimizer& optimizer, MultiStepLROptions options) : LRScheduler(optimizer), o_(options) {
  for (int64_t m : o_.milestones) ANVIL_CHECK(m >= 0, "MultiStepLR: milestones must be >= 0, got ", m);
  std::sort(o_.milestones.begin(), o_.milestones.end());
  start();
}

double MultiStepLR::lr_at(int64_t t, size_t group) const {
  const auto passed = std::upper_bound(o_.milestones.begin(), o_.milestones.end(), t) - o_.milestones.begin();
  return base_lrs().at(group) * std::pow(o_.gamma, static_cast<double>(passed));
}

// ----------------------------------------------------------- ExponentialLR

ExponentialLR::ExponentialLR(Optimizer& optimizer, ExponentialLROptions options) : LRScheduler(optimizer), o_(options) {
  ANVIL_CHECK(o_.gamma >= 0, "ExponentialLR: gamma must be >= 0, got ", o_.gamma);
  start();
}

double ExponentialLR::lr_at(int64_t t, size_t group) const {
  return base_lrs().at(group) * std::pow(o_.gamma, static_cast<double>(t));
}

// ---------------------------------------------- SequentialLR, ChainedScheduler

namespace {

void check_children(const char* name, const Optimizer& optimizer,
                    const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  ANVIL_CHECK(!schedulers.empty(), name, ": got no schedulers");
  for (size_t i = 0; i < schedulers.size(); ++i) {
    ANVIL_CHECK(schedulers[i] != nullptr, name, ": scheduler ", i, " is null");
    ANVIL_CHECK(schedulers[i]->uses(optimizer), name, ": scheduler ", i,
                " was made over another optimizer; every scheduler must use the one given to ", name);
  }
}

}  // namespace

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  check_children("SequentialLR", optimizer, schedulers_);
  ANVIL_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR: expected ", schedulers_.size() - 1,
              " milestones for ", schedulers_.size(), " schedulers, got ", milestones_.size());
  for (size_t i = 0; i < milestones_.size(); ++i)
    ANVIL_CHECK(milestones_[i] > 0 && (i == 0 || milestones_[i] > milestones_[i - 1]),
                "SequentialLR: milestones must be positive and increasing, got ", milestones_[i], " at ", i);
  start();
}

double SequentialLR::lr_at(int64_t t, size_t group) const {
  const auto i = static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), t) - milestones_.begin());
  return schedulers_[i]->lr_at(i == 0 ? t : t - milestones_[i - 1], group);
}

ChainedScheduler::ChainedScheduler(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)) {
  check_children("ChainedScheduler", optimizer, schedulers_);
  start();
}

double ChainedScheduler::lr_at(int64_t t, size_t group) const {
  double lr = base_lrs().at(group);
  for (const auto& s : schedulers_) {
    const double base = s->base_lrs().at(group);
    lr *= base == 0.0 ? 0.0 : s->lr_at(t, group) / base;
  }
  return lr;
}

// -------------------------------------------------------- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options)
    : optimizer_(optimizer), o_(std::move(options)) {
  const size_t groups = optimizer.num_param_groups();
  ANVIL_CHECK(o_.factor < 1.0 && o_.factor >= 0, "ReduceLROnPlateau: factor must be in [0, 1), got ", o_.factor);
  ANVIL_CHECK(o_.patience >= 0 && o_.cooldown >= 0, "ReduceLROnPlateau: patience and cooldown must be >= 0, got ",
              o_.patience, " and ", o_.cooldown);
  ANVIL_CHECK(o_.threshold >= 0, "ReduceLROnPlateau: threshold must be >= 0, got ", o_.threshold);
  ANVIL_CHECK(o_.min_lr.size() == 1 || o_.min_lr.size() == groups, "ReduceLROnPlateau: expected 1 or ", groups,
              " min_lr values (one per parameter group), got ", o_.min_lr.size());
  if (o_.min_lr.size() == 1) o_.min_lr.assign(groups, o_.min_lr[0]);
  s_.best = o_.mode == ReduceLROnPlateauOptions::Mode::Min ? INFINITY : -INFINITY;
  for (size_t g = 0; g < groups; ++g) last_lrs_.push_back(optimizer.lr(g));
}

bool ReduceLROnPlateau::is_better(double a) const {
  using M = ReduceLROnPlateauOptions::Mode;
  using T = ReduceLROnPlateauOptions::ThresholdMode;
  const double b = s_.best, th = o_.threshold;
  if (o_.mode == M::Min) return o_.threshold_mode == T::Rel ? a < b * (1.0 - th) : a < b - th;
  return o_.threshold_mode == T::Rel ? a > b * (1.0 + th) : a > b + th;
}

void ReduceLROnPlateau::step(double metric) {
  ++s_.last_epoch;
  if (is_better(metric)) {
    s_.best = metric;
    s_.num_bad_epochs = 0;
  } else {
    ++s_.num_bad_epochs;
  }
  if (s_.cooldown_counter > 0) {
    --s_.cooldown_counter;
    s_.num_bad_epochs = 0;  // bad epochs in cooldown do not count
  }
  if (s_.num_bad_epochs > o_.patience) {
    for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) {
      const double old_lr = optimizer_.lr(g);
      const double new_lr = std::max(old_lr * o_.factor, o_.min_lr[g]);
      if (old_lr - new_lr > o_.eps) optimizer_.set_lr(g, new_lr);
    }
    s_.cooldown_counter = o_.cooldown;
    s_.num_bad_epochs = 0;
  }
  last_lrs_.clear();
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) last_lrs_.push_back(optimizer_.lr(g));
}

void ReduceLROnPlateau::load_state_dict(const PlateauState& state) {
  ANVIL_CHECK(state.num_bad_epochs >= 0 && state.cooldown_counter >= 0 && state.last_epoch >= 0,
              "ReduceLROnPlateau.load_state_dict: negative counters in the state");
  s_ = state;
}

}  // namespace anvil::nn::optim
