#pragma once
/// @file
/// Task: what the Trainer trains, in the shape of a LightningModule. It owns
/// the model and says how one batch becomes a loss (training_step) and how one
/// batch is scored (validation_step); the Trainer does everything else
/// (devices, loops, accumulation, precision, checkpoints, logging).
///
///     struct MyTask : train::Task {
///       std::shared_ptr<Net> net = std::make_shared<Net>();
///       std::shared_ptr<Module> model() override { return net; }
///       train::StepOutput training_step(const data::Example& b) override {
///         return {anvil::mse_loss(net->forward(b.data), b.target)};
///       }
///       train::Metrics validation_step(const data::Example& b) override {
///         return {{"loss", anvil::mse_loss(net->forward(b.data), b.target).item<double>()}};
///       }
///     };
///
/// Classification needs no subclass: ClassificationTask(model).
#include <map>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "nn/data/dataset.h"
#include "nn/module.h"

namespace anvil::nn::train {

/// Named scalar metrics ("loss", "accuracy", "val_loss", ...), sorted by name
/// so log columns come out in a stable order.
using Metrics = std::map<std::string, double>;

/// What training_step returns.
struct StepOutput {
  Tensor loss;  ///< scalar; the Trainer calls backward on it
  Metrics metrics;  ///< optional extras, logged as train_<name>
};

/// What the Trainer trains, as a LightningModule: the model and how a batch becomes a loss or a score (see the file
/// comment).
class Task {
 public:
  virtual ~Task() = default;
  virtual std::shared_ptr<Module> model() = 0;  ///< The model to train (the Trainer moves it and calls train()/eval()).
  /// The loss of one batch (with optional extra metrics).
  virtual StepOutput training_step(const data::Example& batch) = 0;
  /// Per-batch metrics; the Trainer averages them over the loader, weighting
  /// each batch by its number of examples, and prefixes "val_" / "test_".
  virtual Metrics validation_step(const data::Example& batch) = 0;
  /// The metrics of one test batch (by default validation_step's).
  virtual Metrics test_step(const data::Example& batch) { return validation_step(batch); }
};

/// ClassificationTask's settings.
struct ClassificationOptions {
  double label_smoothing = 0.0;  ///< mixed into the targets, as cross_entropy's option
};

/// model(batch.data) gives logits [N, C]; batch.target holds int64 classes [N].
/// The loss is cross-entropy (mean); validation reports "loss" and "accuracy".
/// Logits are cast to float32 before the loss, so low-precision training
/// computes its loss (and loss scaling) in float32, as autocast does.
class ClassificationTask : public Task {
 public:
  /// Trains `model` (logits [N, C]) with cross-entropy.
  explicit ClassificationTask(std::shared_ptr<Module> model, ClassificationOptions options = {});
  std::shared_ptr<Module> model() override { return model_; }  ///< The model.
  /// Cross-entropy of model(batch.data) against batch.target.
  StepOutput training_step(const data::Example& batch) override;
  Metrics validation_step(const data::Example& batch) override;

 private:
  std::shared_ptr<Module> model_;
  ClassificationOptions options_;
};

/// The fraction of rows whose argmax equals the target.
double accuracy(const Tensor& logits, const Tensor& targets);

}  // namespace anvil::nn::train
