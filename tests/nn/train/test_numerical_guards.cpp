// The Trainer's numerical guards: a non-finite loss stops fit or skips the
// step; detect_anomaly names the op whose backward made NaN or inf.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/autograd/anomaly_mode.h"
#include "nn/optim/optim.h"
#include "nn/train/train.h"
#include "tests/nn/train/train_test_util.h"

namespace anvil {
namespace {

using namespace anvil::nn;
using testing::blobs;
using testing::mlp;

train::TrainerOptions quiet() {
  train::TrainerOptions o;
  o.max_epochs = 1;
  o.device = Device::cpu();
  o.progress = train::ProgressMode::Off;
  o.print_report = false;
  return o;
}

// Classification whose loss turns NaN at one chosen call (1-based), poisoning
// its gradients too, as an overflow in the forward pass would.
class PoisonedTask : public train::ClassificationTask {
 public:
  PoisonedTask(std::shared_ptr<Module> model, int poison_at)
      : ClassificationTask(std::move(model)), poison_at_(poison_at) {}
  train::StepOutput training_step(const data::Example& batch) override {
    train::StepOutput out = ClassificationTask::training_step(batch);
    if (++calls_ == poison_at_) out.loss = mul(out.loss, Scalar(std::numeric_limits<double>::quiet_NaN()));
    return out;
  }

 private:
  int poison_at_, calls_ = 0;
};

// The flattened parameters after each optimizer step.
struct Snapshots : train::Callback {
  std::shared_ptr<Module> model;
  std::vector<std::vector<float>> after_step;
  void on_train_batch_end(train::Trainer&, train::Task&, double) override {
    std::vector<float> all;
    for (const Tensor& p : model->parameters()) {
      auto v = p.detach().to_vector<float>();
      all.insert(all.end(), v.begin(), v.end());
    }
    after_step.push_back(std::move(all));
  }
};

bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

struct GuardedRun {
  train::FitResult result;
  std::vector<std::vector<float>> params;
  std::string error;
};

GuardedRun fit_poisoned(train::NonFiniteLoss policy, bool detect_anomaly = false) {
  auto data = blobs(128, 4, 3, 1, 11);  // 8 steps of 16
  manual_seed(5);
  auto model = mlp(4, 8, 3);
  PoisonedTask task(model, 3);
  optim::AdamW opt(model->parameters(), {.lr = 1e-2});
  data::DataLoader loader(data, testing::loader_options(16));
  auto options = quiet();
  options.on_nonfinite_loss = policy;
  options.detect_anomaly = detect_anomaly;
  train::Trainer trainer(options);
  auto snapshots = std::make_shared<Snapshots>();
  snapshots->model = model;
  trainer.add_callback(snapshots);
  GuardedRun run;
  try {
    run.result = trainer.fit(task, loader, opt);
  } catch (const Error& e) {
    run.error = e.what();
  }
  run.params = snapshots->after_step;
  return run;
}

TEST(TrainerNumericalGuards, IgnoreLetsNaNReachTheWeights) {
  GuardedRun run = fit_poisoned(train::NonFiniteLoss::Ignore);
  ASSERT_EQ(run.params.size(), 8u) << run.error;
  EXPECT_TRUE(all_finite(run.params[1]));
  EXPECT_FALSE(all_finite(run.params.back())) << "the poisoned step did not poison: the test tests nothing";
}

TEST(TrainerNumericalGuards, SkipLeavesTheWeightsAndTrainingContinues) {
  GuardedRun run = fit_poisoned(train::NonFiniteLoss::Skip);
  ASSERT_EQ(run.params.size(), 8u) << run.error;
  EXPECT_EQ(run.result.skipped_steps, 1);
  EXPECT_EQ(run.result.global_step, 8);
  EXPECT_TRUE(std::isnan(run.result.step_losses[2]));
  EXPECT_EQ(run.params[2], run.params[1]) << "the skipped step changed the weights";
  EXPECT_NE(run.params[3], run.params[2]) << "training did not continue after the skip";
  for (const auto& p : run.params) EXPECT_TRUE(all_finite(p));
  // Adam's state was untouched too: later steps stay finite and move on.
  EXPECT_NE(run.params.back(), run.params[3]);
}

TEST(TrainerNumericalGuards, StopIsAnErrorNamingTheStep) {
  GuardedRun run = fit_poisoned(train::NonFiniteLoss::Stop);
  EXPECT_NE(run.error.find("training loss is nan"), std::string::npos) << run.error;
  EXPECT_NE(run.error.find("epoch 0, step 3"), std::string::npos) << run.error;
  ASSERT_EQ(run.params.size(), 2u);
  EXPECT_TRUE(all_finite(run.params.back()));
}

// The loss goes through sqrt at 0, whose gradient is inf.
class SqrtAtZeroTask : public train::ClassificationTask {
 public:
  using ClassificationTask::ClassificationTask;
  train::StepOutput training_step(const data::Example& batch) override {
    train::StepOutput out = ClassificationTask::training_step(batch);
    out.loss = add(out.loss, sqrt(mul(out.loss, Scalar(0.0))));
    return out;
  }
};

TEST(TrainerNumericalGuards, DetectAnomalyNamesTheOp) {
  auto data = blobs(32, 4, 3, 1, 12);
  manual_seed(6);
  auto model = mlp(4, 8, 3);
  SqrtAtZeroTask task(model);
  optim::AdamW opt(model->parameters(), {.lr = 1e-2});
  data::DataLoader loader(data, testing::loader_options(16));
  auto options = quiet();
  options.detect_anomaly = true;
  std::string error;
  try {
    train::Trainer(options).fit(task, loader, opt);
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("anomaly detection"), std::string::npos) << error;
  EXPECT_NE(error.find("'sqrt'"), std::string::npos) << error;
  EXPECT_FALSE(autograd::is_anomaly_enabled()) << "fit left anomaly mode on";
}

}  // namespace
}  // namespace anvil
