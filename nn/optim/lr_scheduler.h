#pragma once
/// @file
/// Learning-rate schedules. Each is a closed-form function of the number of
/// scheduler steps taken, t, with PyTorch's formulas (torch.optim.lr_scheduler).
///
/// Call step() once after each optimizer.step(), i.e. once per batch: t counts
/// optimizer updates, and warmup_steps / total_steps are in updates. (StepLR
/// works per epoch as well if stepped once per epoch; its step_size is then in
/// epochs.) Construction sets every group's lr to the value for t = 0, so the
/// first update uses it:
///
///     optim::AdamW opt(model->parameters(), {.lr = 3e-4});
///     optim::CosineAnnealingLR sched(opt, {.total_steps = 10000, .warmup_steps = 500});
///     for (...) { ...; opt.step(); sched.step(); }
///
/// A scheduler holds a reference to its optimizer, which must outlive it.
/// "Base lr" below is each group's lr when the first scheduler over that
/// optimizer was made (Optimizer::initial_lrs, PyTorch's "initial_lr"), so
/// schedulers combined by SequentialLR or ChainedScheduler share it.
///
/// ReduceLROnPlateau is not a function of t: it follows a metric, stepped
/// once per epoch with the metric's value (train::PlateauScheduler does that
/// inside the Trainer).
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nn/optim/optimizer.h"

namespace anvil::nn::optim {

/// A scheduler's position, for checkpoints.
struct SchedulerState {
  int64_t last_step = 0;  ///< scheduler steps taken
  std::vector<double> base_lrs;  ///< one per parameter group
};

/// The base of the t-indexed schedules: step() sets every group's lr to lr_at(t, group).
class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  /// Advances t by one and sets every group's lr to lr_at(t, group).
  void step();
  /// The lrs set by the last step (or by construction), one per group.
  const std::vector<double>& get_last_lr() const { return last_lrs_; }
  int64_t last_step() const { return last_step_; }  ///< Scheduler steps taken (t).
  /// Each group's base lr (Optimizer::initial_lrs when the scheduler was made).
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  /// The lr of `group` after t steps, without changing anything.
  virtual double lr_at(int64_t t, size_t group) const = 0;

  SchedulerState state_dict() const {
    return {last_step_, base_lrs_};
  }  ///< t and the base lrs, to resume the schedule.
  /// Restores t and the base lrs and sets the optimizer's lrs to match, so it
  /// does not matter whether the optimizer's state is loaded before or after.
  void load_state_dict(const SchedulerState& state);

 protected:
  /// A scheduler over `optimizer`, which must outlive it; reads or records its base lrs.
  explicit LRScheduler(Optimizer& optimizer);
  /// Derived constructors call this last (lr_at is virtual): applies t = 0.
  void start() { apply_at(0); }
  Optimizer& optimizer() const { return optimizer_; }  ///< The optimizer it schedules.

 public:
  bool uses(const Optimizer& o) const { return &optimizer_ == &o; }  ///< Whether this scheduler schedules `o`.

 private:
  void apply_at(int64_t t);  ///< sets the lrs for t and makes t current
  Optimizer& optimizer_;
  int64_t last_step_ = 0;
  std::vector<double> base_lrs_, last_lrs_;
};

/// lr = base * gamma^floor(t / step_size)
struct StepLROptions {
  int64_t step_size = 1;  ///< decay every this many steps
  double gamma = 0.1;  ///< the factor of each decay
};
/// lr = base * gamma^floor(t / step_size), as torch.optim.lr_scheduler.StepLR.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, StepLROptions options);  ///< With `options`.
  /// libtorch's StepLR(optimizer, step_size, gamma).
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1)
      : StepLR(optimizer, StepLROptions{step_size, gamma}) {}
  double lr_at(int64_t t, size_t group) const override;

 private:
  StepLROptions o_;
};

/// lr = base * (start_factor + (1 - start_factor) * min(t, warmup_steps) / warmup_steps):
/// a linear ramp to base, then constant (PyTorch's LinearLR with end_factor 1;
/// start_factor 0 is transformers' constant schedule with warmup, whose first
/// update uses lr 0).
struct LinearWarmupLROptions {
  int64_t warmup_steps = 0;  ///< steps of the ramp (0: constant)
  double start_factor = 0.0;  ///< the fraction of base at t = 0
};
/// A linear warmup to the base lr, then constant (see LinearWarmupLROptions).
class LinearWarmupLR : public LRScheduler {
 public:
  LinearWarmupLR(Optimizer& optimizer, LinearWarmupLROptions options);  ///< With `options`.
  double lr_at(int64_t t, size_t group) const override;

 private:
  LinearWarmupLROptions o_;
};

/// Linear warmup (as LinearWarmupLR) over warmup_steps, then cosine annealing
/// from base down to min_lr at t = total_steps, and min_lr after that:
///
///     lr = min_lr + (base - min_lr) * (1 + cos(pi * (t - warmup) / (total - warmup))) / 2
/// With warmup_steps = 0 this is PyTorch's CosineAnnealingLR(T_max = total_steps,
/// eta_min = min_lr) up to T_max (PyTorch's keeps following the cosine back up).
struct CosineAnnealingLROptions {
  int64_t total_steps = 0;  ///< t at which the lr reaches min_lr
  int64_t warmup_steps = 0;  ///< steps of the linear warmup first
  double min_lr = 0.0;  ///< the lr at the end (and after)
  double warmup_start_factor = 0.0;  ///< the warmup's starting fraction of base
};
/// Linear warmup, then cosine annealing to min_lr (see CosineAnnealingLROptions).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, CosineAnnealingLROptions options);  ///< With `options`.
  double lr_at(int64_t t, size_t group) const override;

 private:
  CosineAnnealingLROptions o_;
};

/// PyTorch's OneCycleLR with cosine annealing (its default), without momentum
/// cycling (as cycle_momentum=False). It ignores the base lrs:
///
///     initial = max_lr / div_factor, min = initial / final_div_factor;
///     phase 1: initial -> max_lr over t in [0, pct_start * total_steps - 1]
///     phase 2: max_lr -> min up to t = total_steps - 1
///     (three_phase: max_lr -> initial, then initial -> min, as PyTorch's).
/// Stepping past total_steps is an error, as in PyTorch.
struct OneCycleLROptions {
  double max_lr = 0.0;  ///< the peak lr
  int64_t total_steps = 0;  ///< the schedule's length in steps
  double pct_start = 0.3;  ///< the fraction of steps spent rising
  double div_factor = 25.0;  ///< initial lr = max_lr / div_factor
  double final_div_factor = 1e4;  ///< final lr = initial lr / final_div_factor
  bool three_phase = false;  ///< fall back to the initial lr before annealing to the final one
};
/// The one-cycle schedule (see OneCycleLROptions), as torch.optim.lr_scheduler.OneCycleLR.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, OneCycleLROptions options);  ///< With `options`.
  double lr_at(int64_t t, size_t group) const override;

 private:
  struct Phase {
    double end_step, start_lr, end_lr;
  };
  OneCycleLROptions o_;
  std::vector<Phase> phases_;
};

/// lr = base * lr_lambda(t), one function for every group or one per group
/// (PyTorch's LambdaLR).
class LambdaLR : public LRScheduler {
 public:
  using Lambda = std::function<double(int64_t)>;  ///< A factor of the base lr, as a function of t.
  LambdaLR(Optimizer& optimizer, Lambda lr_lambda);  ///< One factor function for every group.
  LambdaLR(Optimizer& optimizer, std::vector<Lambda> lr_lambdas);  ///< One factor function per group.
  double lr_at(int64_t t, size_t group) const override;

 private:
  std::vector<Lambda> lambdas_;
};

/// lr = base * gamma^(number of milestones <= t) (PyTorch's MultiStepLR; a
/// milestone listed twice decays twice).
struct MultiStepLROptions {
  std::vector<int64_t> milestones;  ///< steps at which the lr decays, in any order
  double gamma = 0.1;  ///< the factor of each decay
};
/// lr = base * gamma^(milestones passed), as torch.optim.lr_scheduler.MultiStepLR.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, MultiStepLROptions options);  ///< With `options`.
  /// PyTorch's MultiStepLR(optimizer, milestones, gamma).
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1)
      : MultiStepLR(optimizer, MultiStepLROptions{std::move(milestones), gamma}) {}
  double lr_at(int64_t t, size_t group) const override;

 private:
  MultiStepLROptions o_;
};

/// lr = base * gamma^t (PyTorch's ExponentialLR).
struct ExponentialLROptions {
  double gamma = 0.1;  ///< the factor per step
};
/// lr = base * gamma^t, as torch.optim.lr_scheduler.ExponentialLR.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, ExponentialLROptions options);  ///< With `options`.
  /// PyTorch's ExponentialLR(optimizer, gamma).
  ExponentialLR(Optimizer& optimizer, double gamma) : ExponentialLR(optimizer, ExponentialLROptions{gamma}) {}
  double lr_at(int64_t t, size_t group) const override;

 private:
  ExponentialLROptions o_;
};

/// One schedule after another (PyTorch's SequentialLR): schedulers[i] runs
/// from milestones[i-1], restarted there at its own t = 0:
///
///     lr = schedulers[i].lr_at(t - milestones[i-1]), i = number of milestones <= t.
/// The schedulers are made over the same optimizer and only read (never
/// stepped on their own).
///
///     auto warmup = std::make_shared<optim::LinearWarmupLR>(opt, optim::LinearWarmupLROptions{.warmup_steps = 5});
///     auto decay = std::make_shared<optim::ExponentialLR>(opt, optim::ExponentialLROptions{.gamma = 0.9});
///     optim::SequentialLR sched(opt, {warmup, decay}, {5});
class SequentialLR : public LRScheduler {
 public:
  /// `schedulers` in turn, switching at `milestones` (one fewer than schedulers).
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  double lr_at(int64_t t, size_t group) const override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

/// Several schedules at once (PyTorch's ChainedScheduler): their factors
/// multiply, lr = base * prod_i schedulers[i].lr_at(t) / base_i, which is what
/// stepping PyTorch's chainable schedulers (StepLR, MultiStepLR,
/// ExponentialLR, LinearLR, LambdaLR-style factors) one after another gives.
class ChainedScheduler : public LRScheduler {
 public:
  /// All `schedulers` at once, their factors multiplied.
  ChainedScheduler(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers);
  double lr_at(int64_t t, size_t group) const override;

 private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

/// PyTorch's ReduceLROnPlateau: step(metric) once per epoch; when the metric
/// has not improved for more than `patience` steps, every group's lr is
/// multiplied by `factor` (not below min_lr; changes smaller than eps are
/// skipped), then `cooldown` steps pass before counting again. Improvement:
/// mode Min, threshold_mode Rel: metric < best * (1 - threshold); Abs:
/// metric < best - threshold (Max mirrored). A NaN metric never improves.
struct ReduceLROnPlateauOptions {
  /// whether a lower (Min) or a higher (Max) metric is better
  enum class Mode { Min, Max };
  /// whether threshold is relative (Rel) or absolute (Abs)
  enum class ThresholdMode { Rel, Abs };
  Mode mode = Mode::Min;  ///< Min or Max
  double factor = 0.1;  ///< the factor applied to the lr on a plateau
  int64_t patience = 10;  ///< steps without improvement tolerated before reducing
  double threshold = 1e-4;  ///< the smallest change that counts as an improvement
  ThresholdMode threshold_mode = ThresholdMode::Rel;  ///< Rel or Abs
  int64_t cooldown = 0;  ///< steps to wait after a reduction before counting again
  std::vector<double> min_lr = {0.0};  ///< one for every group, or one per group
  double eps = 1e-8;  ///< lr changes smaller than this are skipped
};
/// ReduceLROnPlateau's position, for checkpoints.
struct PlateauState {
  double best = 0;  ///< the best metric so far
  ///@{
  /// steps without improvement, steps of cooldown left, and steps taken
  int64_t num_bad_epochs = 0, cooldown_counter = 0, last_epoch = 0;
  ///@}
};
/// Reduces the lr when a metric stops improving, as torch.optim.lr_scheduler.ReduceLROnPlateau.
class ReduceLROnPlateau {
 public:
  /// Over `optimizer` (which must outlive it), with `options`.
  ReduceLROnPlateau(Optimizer& optimizer, ReduceLROnPlateauOptions options = {});
  ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
  ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;

  /// Takes one epoch's metric; reduces the lrs once it has not improved for more than `patience` steps.
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lrs_; }  ///< Each group's lr after the last step.
  double best() const { return s_.best; }  ///< The best metric so far.
  int64_t num_bad_epochs() const { return s_.num_bad_epochs; }  ///< Steps since the last improvement.
  bool in_cooldown() const { return s_.cooldown_counter > 0; }  ///< Whether it is waiting out a cooldown.
  const ReduceLROnPlateauOptions& options() const { return o_; }  ///< The settings it was made with.

  PlateauState state_dict() const { return s_; }  ///< Its position, to resume.
  void load_state_dict(const PlateauState& state);  ///< Resumes from state_dict().

 private:
  bool is_better(double a) const;
  Optimizer& optimizer_;
  ReduceLROnPlateauOptions o_;
  PlateauState s_;
  std::vector<double> last_lrs_;
};

/// libtorch's name and positional constructor for the same scheduler:
///
///     ReduceLROnPlateauScheduler sched(opt, ReduceLROnPlateauScheduler::SchedulerMode::min, 0.5, 2);
class ReduceLROnPlateauScheduler : public ReduceLROnPlateau {
 public:
  /// libtorch's spelling of Mode.
  enum SchedulerMode { min, max };
  /// libtorch's spelling of ThresholdMode.
  enum ThresholdMode { rel, abs };
  /// ReduceLROnPlateau with libtorch's positional arguments (verbose is accepted and ignored).
  explicit ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode = min, float factor = 0.1f,
                                      int patience = 10, double threshold = 1e-4, ThresholdMode threshold_mode = rel,
                                      int cooldown = 0, const std::vector<float>& min_lr = {}, double eps = 1e-8,
                                      bool verbose = false)
      : ReduceLROnPlateau(optimizer,
                          options(mode, factor, patience, threshold, threshold_mode, cooldown, min_lr, eps)) {
    (void)verbose;  // nothing is printed either way
  }

 private:
  static ReduceLROnPlateauOptions options(SchedulerMode mode, float factor, int patience, double threshold,
                                          ThresholdMode threshold_mode, int cooldown, const std::vector<float>& min_lr,
                                          double eps) {
    ReduceLROnPlateauOptions o;
    o.mode = mode == max ? ReduceLROnPlateauOptions::Mode::Max : ReduceLROnPlateauOptions::Mode::Min;
    o.factor = factor;
    o.patience = patience;
    o.threshold = threshold;
    o.threshold_mode = threshold_mode == abs ? ReduceLROnPlateauOptions::ThresholdMode::Abs
                                             : ReduceLROnPlateauOptions::ThresholdMode::Rel;
    o.cooldown = cooldown;
    if (!min_lr.empty()) o.min_lr.assign(min_lr.begin(), min_lr.end());
    o.eps = eps;
    return o;
  }
};

}  // namespace anvil::nn::optim
