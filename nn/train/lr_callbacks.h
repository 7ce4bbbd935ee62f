#pragma once
/// @file
/// Callbacks about the learning rate.
///
/// LearningRateMonitor (Lightning's): logs every parameter group's lr into
/// the metrics log and TensorBoard as "lr-<Optimizer>" ("lr-<Optimizer>/pg<i>"
/// with several groups, counting from 1), per optimizer step (the lr the step
/// used, in the rows log_every_n_steps writes) or per epoch (the lr the epoch
/// started with, in the epoch's row).
///
/// PlateauScheduler: steps an optim::ReduceLROnPlateau with a monitored
/// epoch metric at each epoch end (Lightning's lr_scheduler_config with
/// "monitor"); its state goes into the Trainer's checkpoints.
///
///     trainer.add_callback(std::make_shared<train::LearningRateMonitor>());
///     auto plateau = std::make_shared<optim::ReduceLROnPlateau>(opt, optim::ReduceLROnPlateauOptions{.patience = 2});
///     trainer.add_callback(std::make_shared<train::PlateauScheduler>(plateau, "val_loss"));
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/optim/lr_scheduler.h"
#include "nn/train/callbacks.h"

namespace anvil::nn::train {

/// LearningRateMonitor's setting.
struct LearningRateMonitorOptions {
  /// per optimizer step or per epoch
  enum class Interval { Step, Epoch };
  Interval logging_interval = Interval::Step;  ///< Step or Epoch
};

/// Logs every parameter group's lr, as Lightning's LearningRateMonitor (see the file comment).
class LearningRateMonitor : public Callback {
 public:
  explicit LearningRateMonitor(LearningRateMonitorOptions options = {}) : options_(options) {}  ///< With `options`.
  std::string name() const override { return "lr_monitor"; }
  void on_train_epoch_start(Trainer& trainer, Task& task) override;  ///< Notes the lrs the epoch starts with.
  void on_train_batch_end(Trainer& trainer, Task& task, double loss) override;
  void on_train_epoch_end(Trainer& trainer, Task& task, const Metrics& metrics) override;
  /// Every value logged, by name, in order (Lightning's lrs).
  const std::map<std::string, std::vector<double>>& lrs() const { return lrs_; }

 private:
  void log(Trainer& trainer, const std::vector<double>& lrs);
  LearningRateMonitorOptions options_;
  std::vector<double> epoch_start_lrs_;
  std::map<std::string, std::vector<double>> lrs_;
};

/// Steps a ReduceLROnPlateau with an epoch metric at each epoch end (see the file comment).
class PlateauScheduler : public Callback {
 public:
  /// Steps `scheduler` with the epoch metric `monitor`.
  PlateauScheduler(std::shared_ptr<optim::ReduceLROnPlateau> scheduler, std::string monitor = "val_loss");
  std::string name() const override { return "plateau_scheduler"; }
  /// A missing metric is an error naming the ones present.
  void on_train_epoch_end(Trainer& trainer, Task& task, const Metrics& metrics) override;
  Metrics state_dict() const override;  ///< The scheduler's state, for checkpoints.
  void load_state_dict(const Metrics& state) override;  ///< Restores state_dict() on resume.
  optim::ReduceLROnPlateau& scheduler() { return *scheduler_; }  ///< The scheduler it steps.

 private:
  std::shared_ptr<optim::ReduceLROnPlateau> scheduler_;
  std::string monitor_;
};

/// The metric `name` of `metrics`, or an error from `who` naming those present.
double find_metric(const Metrics& metrics, const std::string& name, const std::string& who);

}  // namespace anvil::nn::train
