#include "nn/optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

namespace anvil::nn::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) base_lrs_.push_back(optimizer.lr(g));
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
  const double progress = std::min(1.0, static_cast<double>(t - o_.warmup_steps) /
                                            static_cast<double>(o_.total_steps - o_.warmup_steps));
  if (progress >= 1.0) return o_.min_lr;
  return o_.min_lr + (base - o_.min_lr) * (1.0 + std::cos(std::numbers::pi * progress)) / 2.0;
}

// -------------------------------------------------------------- OneCycleLR

OneCycleLR::OneCycleLR(Optimizer& optimizer, OneCycleLROptions options) : LRScheduler(optimizer), o_(options) {
  ANVIL_CHECK(o_.total_steps > 0, "OneCycleLR: total_steps must be > 0, got ", o_.total_steps);
  ANVIL_CHECK(o_.max_lr > 0, "OneCycleLR: max_lr must be > 0, got ", o_.max_lr);
  ANVIL_CHECK(o_.pct_start >= 0 && o_.pct_start <= 1, "OneCycleLR: pct_start must be in [0, 1], got ", o_.pct_start);
  ANVIL_CHECK(o_.div_factor > 0 && o_.final_div_factor > 0, "OneCycleLR: div_factor and final_div_factor must be > 0, got ",
              o_.div_factor, " and ", o_.final_div_factor);
  const double initial = o_.max_lr / o_.div_factor, min_lr = initial / o_.final_div_factor;
  const double up_end = o_.pct_start * static_cast<double>(o_.total_steps) - 1.0;
  const double last = static_cast<double>(o_.total_steps) - 1.0;
  if (o_.three_phase) {
    phases_ = {{up_end, initial, o_.max_lr}, {2.0 * o_.pct_start * o_.total_steps - 2.0, o_.max_lr, initial},
               {last, initial, min_lr}};
  } else {
    phases_ = {{up_end, initial, o_.max_lr}, {last, o_.max_lr, min_lr}};
  }
  start();
}

double OneCycleLR::lr_at(int64_t t, size_t /*group*/) const {
  ANVIL_CHECK(t <= o_.total_steps, "OneCycleLR: tried to step ", t, " times; the schedule has total_steps = ",
              o_.total_steps);
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

}  // namespace anvil::nn::optim
