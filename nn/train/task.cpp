#include "nn/train/task.h"

#include "core/ops.h"

namespace anvil::nn::train {

ClassificationTask::ClassificationTask(std::shared_ptr<Module> model, ClassificationOptions options)
    : model_(std::move(model)), options_(options) {
  ANVIL_CHECK(model_ != nullptr, "ClassificationTask: model is null");
}

StepOutput ClassificationTask::training_step(const data::Example& batch) {
  Tensor logits = model_->forward(batch.data).to(kFloat32);
  return {cross_entropy(logits, batch.target, {.label_smoothing = options_.label_smoothing}), {}};
}

Metrics ClassificationTask::validation_step(const data::Example& batch) {
  Tensor logits = model_->forward(batch.data).to(kFloat32);
  double loss = cross_entropy(logits, batch.target, {.label_smoothing = options_.label_smoothing}).item<double>();
  return {{"loss", loss}, {"accuracy", accuracy(logits, batch.target)}};
}

double accuracy(const Tensor& logits, const Tensor& targets) {
  ANVIL_CHECK(logits.dim() == 2 && targets.dim() == 1 && logits.size(0) == targets.size(0),
              "accuracy: expected logits [N, C] and targets [N], got ", logits.shape_str(), " and ",
              targets.shape_str());
  if (targets.numel() == 0) return 0.0;
  Tensor correct = eq(argmax(logits, 1), targets.to(kInt64));
  return correct.to(kFloat64).mean().item<double>();
}

}  // namespace anvil::nn::train
