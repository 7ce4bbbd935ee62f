#pragma once
/// @file
/// Callbacks: code that runs at fixed points of Trainer::fit, as Lightning's
/// Callback hooks. Override the hooks you need:
///
///     struct PrintLr : train::Callback {
///       void on_train_epoch_end(train::Trainer& t, train::Task&, const train::Metrics&) override {
///         std::cout << "lr " << t.last_lr() << "\n";
///       }
///     };
///     trainer.add_callback(std::make_shared<PrintLr>());
///
/// A callback stops training with trainer.request_stop(); it takes effect at
/// the end of the current epoch. State a callback returns from state_dict()
/// is saved in checkpoints and handed back on resume.
#include <cstdint>
#include <limits>
#include <map>
#include <string>

#include "nn/train/task.h"

namespace anvil::nn::train {

class Trainer;

/// Code that runs at fixed points of Trainer::fit, as Lightning's Callback (see the file comment).
class Callback {
 public:
  virtual ~Callback() = default;
  /// Unique among a trainer's callbacks: names the callback's checkpoint state.
  virtual std::string name() const { return "callback"; }

  virtual void on_fit_start(Trainer&, Task&) {}  ///< At the start of fit, after the device and the loaders are set.
  virtual void on_train_epoch_start(Trainer&, Task&) {}  ///< At the start of each training epoch.
  /// After each optimizer step; `loss` is the step's (unscaled) training loss.
  virtual void on_train_batch_end(Trainer&, Task&, double loss) {}
  /// `metrics` are the prefixed validation metrics ("val_loss", ...).
  virtual void on_validation_end(Trainer&, Task&, const Metrics& metrics) {}
  /// `metrics`: the epoch's train_loss (mean over its steps), any train_<name>
  /// means, and the validation metrics when validation ran.
  virtual void on_train_epoch_end(Trainer&, Task&, const Metrics& metrics) {}
  virtual void on_fit_end(Trainer&, Task&) {}  ///< At the end of fit (also after a stop).

  virtual Metrics state_dict() const { return {}; }  ///< Numeric state to save in checkpoints (empty: none).
  virtual void load_state_dict(const Metrics&) {}  ///< Restores state_dict() on resume.
  /// State that is text (file paths), saved in the checkpoint's metadata.
  virtual std::map<std::string, std::string> text_state() const { return {}; }
  virtual void load_text_state(const std::map<std::string, std::string>&) {}  ///< Restores text_state() on resume.
};

/// Whether a lower (Min) or a higher (Max) metric is better.
enum class MonitorMode { Min, Max };

/// EarlyStopping's settings.
struct EarlyStoppingOptions {
  std::string monitor = "val_loss";  ///< the epoch metric to watch
  MonitorMode mode = MonitorMode::Min;  ///< Min or Max
  int64_t patience = 3;  ///< epochs without improvement before stopping
  double min_delta = 0.0;  ///< an improvement must beat the best by more than this
};

/// Stops when the monitored metric has not improved for `patience` epochs in a
/// row (checked at each epoch end). A metric missing from the epoch's metrics
/// is an error naming the ones present (a typo should not silently disable it);
/// a nan counts as no improvement.
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options = {});  ///< With `options`.
  std::string name() const override { return "early_stopping"; }
  void on_train_epoch_end(Trainer& trainer, Task& task, const Metrics& metrics) override;

  double best() const { return best_; }  ///< The best metric so far.
  int64_t wait_count() const { return wait_; }  ///< Epochs since the last improvement.
  bool stopped() const { return stopped_epoch_ >= 0; }  ///< Whether it has stopped the run.
  int64_t stopped_epoch() const { return stopped_epoch_; }  ///< -1 if not stopped
  const EarlyStoppingOptions& options() const { return options_; }  ///< The settings it was made with.

  Metrics state_dict() const override;  ///< The best metric, the wait count and the stop epoch, for checkpoints.
  void load_state_dict(const Metrics& state) override;  ///< Restores state_dict() on resume.

 private:
  EarlyStoppingOptions options_;
  double best_;
  int64_t wait_ = 0;
  int64_t stopped_epoch_ = -1;
};

}  // namespace anvil::nn::train
