// Checkpoint + resume continues a run exactly: the same per-step losses and
// the same final parameters as a run that was never interrupted.
#include <gtest/gtest.h>

#include <filesystem>

#include "nn/optim/optim.h"
#include "nn/serialize/checkpoint.h"
#include "nn/train/train.h"
#include "tests/nn/train/train_test_util.h"

namespace anvil {
namespace {

using namespace anvil::nn;
using testing::blobs;
using testing::mlp;
using testing::TempDir;

// Everything a run needs, built from scratch (as a fresh process would).
struct RunSetup {
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<train::ClassificationTask> task;
  std::unique_ptr<optim::AdamW> opt;
  std::unique_ptr<optim::CosineAnnealingLR> sched;
  std::unique_ptr<data::DataLoader> loader, val;
  std::shared_ptr<train::EarlyStopping> stopper;

  explicit RunSetup(uint64_t init_seed) {
    auto set = blobs(96, 6, 3, 21, 22);
    manual_seed(init_seed);
    model = mlp(6, 16, 3, /*dropout=*/0.3);  // dropout: the RNG state matters
    task = std::make_unique<train::ClassificationTask>(model);
    opt = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions{.lr = 1e-2});
    sched = std::make_unique<optim::CosineAnnealingLR>(
        *opt, optim::CosineAnnealingLROptions{.total_steps = 60, .warmup_steps = 5});
    loader = std::make_unique<data::DataLoader>(set, testing::loader_options(16, /*shuffle=*/true, /*seed=*/5));
    val = std::make_unique<data::DataLoader>(set, testing::loader_options(48));
    stopper = std::make_shared<train::EarlyStopping>(train::EarlyStoppingOptions{.patience = 100});
  }

  train::FitResult fit(train::TrainerOptions o) {
    o.device = Device::cpu();
    o.progress = train::ProgressMode::Off;
    o.print_report = false;
    o.grad_accumulation_steps = 2;
    o.clip_grad_norm = 1.0;
    train::Trainer trainer(o);
    trainer.add_callback(stopper);
    return trainer.fit(*task, *loader, val.get(), *opt, sched.get());
  }
};

train::TrainerOptions epochs(int64_t n) {
  train::TrainerOptions o;
  o.max_epochs = n;
  return o;
}

TEST(TrainerResume, ResumedRunMatchesUninterruptedRun) {
  TempDir dir("anvil-resume");
  constexpr int64_t kEpochs = 5, kFirst = 2;

  RunSetup whole(1);
  train::TrainerOptions o0 = epochs(kEpochs);
  o0.metrics_path = dir.file("whole.csv");
  o0.log_every_n_steps = 2;
  train::FitResult all = whole.fit(o0);
  ASSERT_EQ(all.global_step, kEpochs * 3);  // 6 batches per epoch, 2 per step

  RunSetup first(1);
  train::TrainerOptions o1 = epochs(kFirst);
  o1.checkpoint_path = dir.file("ckpt-{epoch}.safetensors");
  o1.metrics_path = dir.file("parts.csv");
  o1.log_every_n_steps = 2;
  train::FitResult part1 = first.fit(o1);
  const std::string ckpt = dir.file("ckpt-2.safetensors");
  ASSERT_TRUE(std::filesystem::exists(ckpt));
  EXPECT_TRUE(std::filesystem::exists(dir.file("ckpt-1.safetensors")));

  // A fresh start: other weights, another global RNG state, a new loader
  // whose epoch counter is 0 and a new optimizer without state.
  manual_seed(777);
  RunSetup second(2);
  train::TrainerOptions o2 = epochs(kEpochs);
  o2.resume_from = ckpt;
  o2.metrics_path = dir.file("parts.csv");
  o2.log_every_n_steps = 2;
  train::FitResult part2 = second.fit(o2);

  EXPECT_EQ(part2.epochs_completed, kEpochs);
  EXPECT_EQ(part2.global_step, all.global_step);
  std::vector<double> joined = part1.step_losses;
  joined.insert(joined.end(), part2.step_losses.begin(), part2.step_losses.end());
  ASSERT_EQ(joined.size(), all.step_losses.size());
  for (size_t i = 0; i < joined.size(); ++i) EXPECT_EQ(joined[i], all.step_losses[i]) << "step " << i;
  std::vector<double> lrs = part1.step_lrs;
  lrs.insert(lrs.end(), part2.step_lrs.begin(), part2.step_lrs.end());
  EXPECT_EQ(lrs, all.step_lrs);

  auto a = whole.model->state_dict(), b = second.model->state_dict();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.to_vector<float>(), b[i].second.to_vector<float>()) << a[i].first;
  }
  // Optimizer and callback state continued too.
  EXPECT_EQ(whole.stopper->best(), second.stopper->best());
  EXPECT_EQ(whole.stopper->wait_count(), second.stopper->wait_count());
  EXPECT_EQ(whole.sched->last_step(), second.sched->last_step());
  const auto& pa = whole.opt->parameters();
  const auto& pb = second.opt->parameters();
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(whole.opt->state_of(pa[i])->buffers.at("exp_avg_sq").to_vector<float>(),
              second.opt->state_of(pb[i])->buffers.at("exp_avg_sq").to_vector<float>());
  // The metrics file continued: the same rows as the uninterrupted run's.
  train::MetricsLog whole_log(dir.file("whole.csv"), train::MetricsLog::OpenMode::Append);
  train::MetricsLog parts_log(dir.file("parts.csv"), train::MetricsLog::OpenMode::Append);
  ASSERT_EQ(whole_log.rows().size(), parts_log.rows().size());
  for (size_t i = 0; i < whole_log.rows().size(); ++i)
    for (const char* key : {"step", "epoch", "train_loss", "lr", "val_loss"}) {
      auto in_whole = whole_log.rows()[i].find(key), in_parts = parts_log.rows()[i].find(key);
      ASSERT_EQ(in_whole == whole_log.rows()[i].end(), in_parts == parts_log.rows()[i].end()) << key << " row " << i;
      if (in_whole != whole_log.rows()[i].end()) {
        EXPECT_EQ(in_whole->second, in_parts->second) << key << " row " << i;
      }
    }
  // The final checkpoint of the resumed run records where it ended.
  EXPECT_TRUE(std::filesystem::exists(dir.file("ckpt-2.safetensors")));
}

TEST(TrainerResume, CheckpointHoldsTheTrainingState) {
  TempDir dir("anvil-resume-contents");
  RunSetup s(3);
  train::TrainerOptions o = epochs(2);
  o.checkpoint_path = dir.file("last.safetensors");
  o.checkpoint_every_n_epochs = 1;
  train::FitResult r = s.fit(o);
  serialize::Checkpoint c = serialize::load_checkpoint(o.checkpoint_path);
  EXPECT_EQ(c.epoch, 2);
  EXPECT_EQ(c.step, r.global_step);
  ASSERT_TRUE(c.optimizer.has_value());
  ASSERT_TRUE(c.scheduler.has_value());
  EXPECT_EQ(c.scheduler->last_step, r.global_step);
  ASSERT_TRUE(c.rng.has_value());
  EXPECT_EQ(c.rng->seed, generator_state().seed);
  EXPECT_EQ(c.rng->offset, generator_state().offset);
  bool has_callback_state = false;
  for (auto& [n, t] : c.extra) has_callback_state = has_callback_state || n == "callbacks.early_stopping.best";
  EXPECT_TRUE(has_callback_state);
  EXPECT_EQ(c.model.size(), s.model->state_dict().size());
}

TEST(TrainerResume, MissingCheckpointIsAClearError) {
  RunSetup s(4);
  train::TrainerOptions o = epochs(1);
  o.resume_from = "/nonexistent/anvil/ckpt.safetensors";
  try {
    s.fit(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/anvil/ckpt.safetensors"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace anvil
