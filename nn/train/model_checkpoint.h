#pragma once
/// @file
/// ModelCheckpoint (Lightning's): at the end of every `every_n_epochs`-th
/// epoch, saves a full Trainer checkpoint (resumable with
/// TrainerOptions::resume_from) when the monitored metric is among the best
/// save_top_k so far, deleting the file that drops out; save_last also writes
/// last.safetensors every time.
///
///     auto ckpt = std::make_shared<train::ModelCheckpoint>(train::ModelCheckpointOptions{
///         .dirpath = "run/ckpt", .filename = "{epoch}-{val_loss:.4f}", .monitor = "val_loss", .save_top_k = 3,
///         .save_last = true});
///     trainer.add_callback(ckpt);
///     ... trainer.fit(...); ckpt->best_model_path();   // run/ckpt/epoch=7-val_loss=0.3120.safetensors
///
/// The file name is `filename` with each {name} or {name:format} replaced by
/// the value of epoch (0-based, as Lightning), step (optimizer steps so far)
/// or an epoch metric, formatted printf-style ("{val_loss:.4f}",
/// "{epoch:03d}") or, without a format, as an integer for epoch and step and
/// with up to 9 significant digits otherwise; auto_insert_metric_name writes
/// "name=value" (Lightning's default). A '/' in a name becomes '_'.
/// Without a monitor, the latest save_top_k checkpoints are kept (-1: all).
/// A NaN metric ranks worst. The folder is created (or found unwritable) at
/// fit start, before any training.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nn/train/callbacks.h"

namespace anvil::nn::train {

/// ModelCheckpoint's settings, as Lightning's (see the file comment).
struct ModelCheckpointOptions {
  std::string dirpath = "checkpoints";  ///< the folder checkpoints go in (created at fit start)
  std::string filename = "{epoch}-{step}";  ///< the file name, with {epoch}, {step} and {metric:format} fields
  std::string monitor;  ///< empty: no metric (keep the latest)
  MonitorMode mode = MonitorMode::Min;  ///< Min or Max
  int64_t save_top_k = 1;  ///< -1: every checkpoint; 0: none (save_last still writes)
  bool save_last = false;  ///< also write last.safetensors every time
  bool auto_insert_metric_name = true;  ///< write "name=value" for each {name}
  int64_t every_n_epochs = 1;  ///< save every this many epochs
};

/// Saves the best checkpoints by a metric, as Lightning's ModelCheckpoint (see the file comment).
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(ModelCheckpointOptions options = {});  ///< With `options`.
  std::string name() const override { return "model_checkpoint"; }
  /// Creates the folder, or fails before any training when it cannot be written.
  void on_fit_start(Trainer& trainer, Task& task) override;
  void on_train_epoch_end(Trainer& trainer, Task& task, const Metrics& metrics) override;

  /// The best checkpoint's path so far (empty before any).
  const std::string& best_model_path() const { return best_model_path_; }
  double best_model_score() const { return best_model_score_; }  ///< The best checkpoint's metric.
  const std::string& last_model_path() const { return last_model_path_; }  ///< The path save_last wrote last.
  /// The kept checkpoints and their scores (the step number without a monitor).
  const std::map<std::string, double>& best_k_models() const { return best_k_; }
  /// The path a checkpoint with these values would get.
  std::string format_checkpoint_name(const Metrics& values) const;

  /// The kept files and their scores travel in the checkpoint (its metadata),
  /// so a resumed run goes on ranking against them.
  Metrics state_dict() const override;
  void load_state_dict(const Metrics& state) override;  ///< Restores state_dict() on resume.
  std::map<std::string, std::string> text_state() const override;
  /// Restores the kept paths from text_state() on resume.
  void load_text_state(const std::map<std::string, std::string>& state) override;

 private:
  bool better(double a, double b) const;  ///< score a ranks before score b
  std::string worst_path() const;
  ModelCheckpointOptions options_;
  std::map<std::string, double> best_k_;
  std::string best_model_path_, last_model_path_;
  double best_model_score_;
};

}  // namespace anvil::nn::train
