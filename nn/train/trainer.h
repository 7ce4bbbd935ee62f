#pragma once
/// @file
/// Trainer: the training loop, written once, as Lightning's Trainer. Give it a
/// Task (the model and how a batch becomes a loss), loaders and an optimizer;
/// it handles the device, epochs, gradient accumulation and clipping, mixed
/// precision, LR scheduling, validation, callbacks, checkpoints and resume, a
/// progress bar, a metrics file, a plot of the curves and a report of where
/// the time went.
///
///     auto model = std::make_shared<Mlp>();
///     train::ClassificationTask task(model);
///     optim::AdamW opt(model->parameters(), {.lr = 1e-3});
///     train::Trainer trainer({.max_epochs = 5, .metrics_path = "run/metrics.csv",
///                             .plot_path = "run/curves.svg"});
///     trainer.fit(task, train_loader, &val_loader, opt);
///     train::Metrics m = trainer.test(task, test_loader);  // {"test_accuracy": ..., "test_loss": ...}
///
/// One optimizer step ("step", as Lightning's global_step) consumes
/// grad_accumulation_steps batches, each loss divided by that number; a
/// shorter group left at the end of an epoch steps too (its losses are still
/// divided by the full number, as in Lightning). The LR scheduler steps once
/// per optimizer step, also when fp16 loss scaling skips one. At each epoch start the train loader's epoch is set to
/// the epoch number, so its shuffle order depends only on (seed, epoch) and a resumed run sees the same batches as an
/// uninterrupted one.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/device.h"
#include "nn/data/dataloader.h"
#include "nn/optim/lr_scheduler.h"
#include "nn/optim/optimizer.h"
#include "nn/serialize/checkpoint.h"
#include "nn/train/amp.h"
#include "nn/train/callbacks.h"
#include "nn/train/metrics_log.h"
#include "nn/train/monitor.h"
#include "nn/train/profiler.h"
#include "nn/train/progress.h"
#include "nn/train/task.h"

namespace anvil::nn::train {

/// What fit does when a step's training loss is NaN or inf.
enum class NonFiniteLoss {
  Ignore,  ///< step anyway (the fp16 scaler still skips steps whose gradients overflowed)
  Skip,  ///< drop the step's gradients, leave the weights and optimizer state untouched, count it in skipped_steps
  Stop,  ///< throw an anvil::Error naming the epoch and step
};

/// Optimizer steps [first, last) to profile (both 0: none).
struct StepRange {
  ///@{
  /// the first step in the range and the one after the last
  int64_t first = 0, last = 0;
  ///@}
  bool contains(int64_t step) const { return step >= first && step < last; }  ///< Whether `step` is in [first, last).
  bool empty() const { return last <= first; }  ///< Whether the range holds no step.
};

/// The Trainer's settings: length, device, precision, clipping, checkpoints, logging and profiling.
struct TrainerOptions {
  /// Training stops at whichever limit comes first. Unset max_epochs: 1, or
  /// no epoch limit when max_steps is set (Lightning's Trainer(max_steps=N)).
  std::optional<int64_t> max_epochs;
  int64_t max_steps = -1;  ///< optimizer steps in all (counting a resumed run's); -1: no limit
  /// Unset: the best available, cuda:0 when a GPU and anvil's CUDA backend are
  /// present, else cpu (see best_device()).
  std::optional<Device> device;
  int64_t grad_accumulation_steps = 1;  ///< batches per optimizer step; the loss is divided by it
  double clip_grad_norm = 0.0;  ///< max global L2 norm of the gradients; 0: no clipping
  double clip_grad_value = 0.0;  ///< clamp every gradient element into [-v, v] (after unscaling); 0: off
  Precision precision = Precision::FP32;  ///< FP32, BF16 or FP16 (mixed precision)
  AmpMode amp_mode = AmpMode::Autocast;  ///< how BF16/FP16 is applied (amp.h)
  /// Where checkpoints go; "{epoch}" in the path is replaced by the number of
  /// epochs completed ("run/epoch{epoch}.safetensors"); otherwise one file is
  /// replaced each time. Empty: no checkpoints.
  /// Missing folders of checkpoint_path, metrics_path, plot_path,
  /// profile_path and tensorboard_dir are created at fit start, which fails
  /// there, before any training, when one cannot be written.
  std::string checkpoint_path;
  int64_t checkpoint_every_n_epochs = 1;  ///< how often to write checkpoint_path
  std::string resume_from;  ///< a checkpoint to continue from
  int64_t log_every_n_steps = 50;  ///< metrics-file rows and plain progress lines
  std::string metrics_path;  ///< .csv or .jsonl; empty: none
  /// TensorBoard event files (tfevents) of the same rows as the metrics log,
  /// written into this folder; empty: none. `tensorboard --logdir` reads it.
  std::string tensorboard_dir;
  std::string plot_path;  ///< .svg or .png; empty: none
  ProgressMode progress = ProgressMode::Auto;  ///< Auto (a bar on a terminal, else lines), Bar, Lines or Off
  std::optional<uint64_t> seed;  ///< seeds the global generator at fit start
  bool print_report = true;  ///< the monitor's report at the end of fit (not with progress Off)
  std::string profile_path;  ///< a Chrome trace of profile_steps; empty: none
  StepRange profile_steps;  ///< optimizer steps to profile into profile_path
  std::ostream* out = nullptr;  ///< progress and report (default std::cout)
  /// Numerical guards (Lightning's detect_anomaly, and skipping bad steps).
  /// detect_anomaly runs fit's backward passes in autograd anomaly mode: the
  /// first NaN/inf gradient is an error naming the op that made it (slow).
  bool detect_anomaly = false;
  NonFiniteLoss on_nonfinite_loss = NonFiniteLoss::Ignore;  ///< Ignore, Skip or Stop on a NaN or inf training loss
};

/// What fit() returns (and Trainer::history() keeps).
struct FitResult {
  std::vector<double> step_losses;  ///< per optimizer step of this call (mean over its batches, unscaled)
  std::vector<double> step_lrs;  ///< the lr (group 0) each step used
  std::vector<Metrics> epoch_metrics;  ///< per epoch of this call: train_loss_epoch, val_*
  int64_t epochs_completed = 0;  ///< counting epochs before a resume
  int64_t global_step = 0;  ///< optimizer steps taken, counting a resumed run's
  int64_t skipped_steps = 0;  ///< steps skipped: fp16 inf/nan gradients, or a non-finite loss (Skip)
  bool stopped_early = false;  ///< a callback requested the stop
  std::string report;  ///< the monitor's report
};

Device best_device();  ///< The first CUDA device when one is available, else the CPU.

/// The training loop, written once, as Lightning's Trainer (see the file comment).
class Trainer {
 public:
  explicit Trainer(TrainerOptions options = {});  ///< A trainer with `options`; nothing runs until fit().
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  void add_callback(std::shared_ptr<Callback> callback);  ///< Adds a callback; callbacks run in the order added.

  /// Trains `task` on `train` with `optimizer`, without validation or an LR scheduler.
  FitResult fit(Task& task, data::DataLoader& train, optim::Optimizer& optimizer);
  /// Trains `task` on `train` with `optimizer`, validating on `val` each epoch when given, stepping `scheduler` after
  /// each optimizer step.
  FitResult fit(Task& task, data::DataLoader& train, data::DataLoader* val, optim::Optimizer& optimizer,
                optim::LRScheduler* scheduler = nullptr);
  /// Averages the task's validation_step / test_step metrics over the loader
  /// (weighted by batch size), in eval mode without gradients. Keys are
  /// prefixed "val_" / "test_".
  Metrics validate(Task& task, data::DataLoader& loader);
  Metrics test(Task& task, data::DataLoader& loader);  ///< Evaluates `task` on `loader` with test_ metric names.

  // --- state, for callbacks and after fit ---
  const TrainerOptions& options() const { return options_; }  ///< The settings it was made with.
  Device device() const { return device_; }  ///< The device training runs on.
  int64_t current_epoch() const { return current_epoch_; }  ///< 0-based
  int64_t global_step() const { return global_step_; }  ///< optimizer steps done
  double last_lr() const { return last_lr_; }  ///< Group 0's lr of the last optimizer step.
  /// The lr of every parameter group that the last optimizer step used.
  const std::vector<double>& last_lrs() const { return last_lrs_; }
  /// The optimizer of the running fit (null outside fit).
  const optim::Optimizer* optimizer() const;
  /// The epoch limit in effect (see TrainerOptions::max_epochs); INT64_MAX: none.
  int64_t max_epochs() const;
  /// Adds a value to the next row of the metrics log (and TensorBoard): the
  /// row of the current step when it is a logging step (a callback's
  /// on_train_batch_end), else the epoch's row (on_train_epoch_start/end);
  /// values not written by then are dropped, as Lightning's log with
  /// log_every_n_steps.
  void log(const std::string& name, double value) { pending_log_[name] = value; }
  /// Writes a full checkpoint of the running fit (model, optimizer,
  /// scheduler, RNG, callbacks' state) to `path`, as the epoch-end
  /// checkpoints; for callbacks such as ModelCheckpoint.
  void save_checkpoint(const std::string& path);
  /// Asks fit to stop at the end of the current epoch (what EarlyStopping calls).
  void request_stop() { should_stop_ = true; }
  bool should_stop() const { return should_stop_; }  ///< Whether a stop was requested.
  const FitResult& history() const { return result_; }  ///< What the last fit returned, kept for callbacks.
  Profiler& profiler() { return profiler_; }  ///< The profiler (enabled inside profile_steps).
  /// The FP16 loss scaler (null unless precision is FP16).
  const GradScaler* grad_scaler() const { return scaler_.get(); }

 private:
  struct Run;  // the per-fit objects: optimizer, loaders, logs, monitor
  void prepare(Task& task);
  void train_epoch(Run& run);
  void optimizer_step(Run& run);
  Metrics evaluate(Task& task, data::DataLoader& loader, const std::string& prefix, bool test);
  data::Example to_device(const data::Example& batch) const;
  void save_checkpoint(Run& run, int64_t epochs_completed);
  serialize::Checkpoint make_checkpoint(Run& run, int64_t epochs_completed) const;
  void check_output_paths() const;
  int64_t displayed_max_epochs(const Run& run) const;  ///< for the progress bar
  bool reached_max_steps() const { return options_.max_steps >= 0 && global_step_ >= options_.max_steps; }
  void write_row(Run& run, MetricsRow row);  ///< metrics log and TensorBoard
  void load_checkpoint(Run& run, const std::string& path);
  void write_plot() const;
  void update_profiling();  ///< enables the profiler inside profile_steps; writes the trace after
  void finish_profiling();

  TrainerOptions options_;
  Device device_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
  int64_t current_epoch_ = 0, global_step_ = 0;
  double last_lr_ = 0;
  std::vector<double> last_lrs_;
  MetricsRow pending_log_;
  Run* run_ = nullptr;  ///< during fit
  bool should_stop_ = false;
  FitResult result_;
  Profiler profiler_;
  bool trace_written_ = false;
  std::unique_ptr<GradScaler> scaler_;
  std::unique_ptr<MasterWeights> masters_;
  /// All points of the curves (a resumed fit continues them).
  std::vector<double> plot_steps_, plot_losses_, plot_epoch_steps_;
  std::vector<Metrics> plot_epoch_metrics_;
};

}  // namespace anvil::nn::train
