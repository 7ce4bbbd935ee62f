#pragma once
// Learning-rate schedules. Each is a closed-form function of the number of
// scheduler steps taken, t, with PyTorch's formulas (torch.optim.lr_scheduler).
//
// Call step() once after each optimizer.step(), i.e. once per batch: t counts
// optimizer updates, and warmup_steps / total_steps are in updates. (StepLR
// works per epoch as well if stepped once per epoch; its step_size is then in
// epochs.) Construction sets every group's lr to the value for t = 0, so the
// first update uses it:
//
//   optim::AdamW opt(model->parameters(), {.lr = 3e-4});
//   optim::CosineAnnealingLR sched(opt, {.total_steps = 10000, .warmup_steps = 500});
//   for (...) { ...; opt.step(); sched.step(); }
//
// A scheduler holds a reference to its optimizer, which must outlive it.
// "Base lr" below is each group's lr when the scheduler was made.
#include <cstdint>
#include <vector>

#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

struct SchedulerState {
  int64_t last_step = 0;        // scheduler steps taken
  std::vector<double> base_lrs; // one per parameter group
};

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances t by one and sets every group's lr to lr_at(t, group).
  void step();
  // The lrs set by the last step (or by construction), one per group.
  const std::vector<double>& get_last_lr() const { return last_lrs_; }
  int64_t last_step() const { return last_step_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  // The lr of `group` after t steps, without changing anything.
  virtual double lr_at(int64_t t, size_t group) const = 0;

  SchedulerState state_dict() const { return {last_step_, base_lrs_}; }
  // Restores t and the base lrs and sets the optimizer's lrs to match, so it
  // does not matter whether the optimizer's state is loaded before or after.
  void load_state_dict(const SchedulerState& state);

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // Derived constructors call this last (lr_at is virtual): applies t = 0.
  void start() { apply_at(0); }
  Optimizer& optimizer() const { return optimizer_; }

 private:
  void apply_at(int64_t t);  // sets the lrs for t and makes t current
  Optimizer& optimizer_;
  int64_t last_step_ = 0;
  std::vector<double> base_lrs_, last_lrs_;
};

// lr = base * gamma^floor(t / step_size)
struct StepLROptions {
  int64_t step_size = 1;
  double gamma = 0.1;
};
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, StepLROptions options);
  double lr_at(int64_t t, size_t group) const override;
 private:
  StepLROptions o_;
};

// lr = base * (start_factor + (1 - start_factor) * min(t, warmup_steps) / warmup_steps):
// a linear ramp to base, then constant (PyTorch's LinearLR with end_factor 1;
// start_factor 0 is transformers' constant schedule with warmup, whose first
// update uses lr 0).
struct LinearWarmupLROptions {
  int64_t warmup_steps = 0;
  double start_factor = 0.0;
};
class LinearWarmupLR : public LRScheduler {
 public:
  LinearWarmupLR(Optimizer& optimizer, LinearWarmupLROptions options);
  double lr_at(int64_t t, size_t group) const override;
 private:
  LinearWarmupLROptions o_;
};

// Linear warmup (as LinearWarmupLR) over warmup_steps, then cosine annealing
// from base down to min_lr at t = total_steps, and min_lr after that:
//   lr = min_lr + (base - min_lr) * (1 + cos(pi * (t - warmup) / (total - warmup))) / 2
// With warmup_steps = 0 this is PyTorch's CosineAnnealingLR(T_max = total_steps,
// eta_min = min_lr) up to T_max (PyTorch's keeps following the cosine back up).
struct CosineAnnealingLROptions {
  int64_t total_steps = 0;
  int64_t warmup_steps = 0;
  double min_lr = 0.0;
  double warmup_start_factor = 0.0;
};
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, CosineAnnealingLROptions options);
  double lr_at(int64_t t, size_t group) const override;
 private:
  CosineAnnealingLROptions o_;
};

// PyTorch's OneCycleLR with cosine annealing (its default), without momentum
// cycling (as cycle_momentum=False). It ignores the base lrs:
//   initial = max_lr / div_factor, min = initial / final_div_factor;
//   phase 1: initial -> max_lr over t in [0, pct_start * total_steps - 1]
//   phase 2: max_lr -> min up to t = total_steps - 1
//   (three_phase: max_lr -> initial, then initial -> min, as PyTorch's).
// Stepping past total_steps is an error, as in PyTorch.
struct OneCycleLROptions {
  double max_lr = 0.0;
  int64_t total_steps = 0;
  double pct_start = 0.3;
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
};
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, OneCycleLROptions options);
  double lr_at(int64_t t, size_t group) const override;
 private:
  struct Phase { double end_step, start_lr, end_lr; };
  OneCycleLROptions o_;
  std::vector<Phase> phases_;
};

}  // namespace anvil::nn::optim
