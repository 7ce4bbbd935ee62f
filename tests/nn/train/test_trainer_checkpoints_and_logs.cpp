// The Trainer's max_steps, ModelCheckpoint (monitor, mode, top-k, last,
// names with the metric), the LR monitor and ReduceLROnPlateau callbacks,
// TensorBoard event files (parsed back here: lengths, CRC-32C, the Event
// protobuf) and output folders created, or refused, before the first epoch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "nn/optim/optim.h"
#include "nn/train/train.h"
#include "tests/nn/train/train_test_util.h"

namespace anvil {
namespace {

using namespace anvil::nn;
using testing::blobs;
using testing::mlp;
using testing::TempDir;
namespace fs = std::filesystem;

train::TrainerOptions quiet(std::optional<int64_t> epochs) {
  train::TrainerOptions o;
  o.max_epochs = epochs;
  o.device = Device::cpu();
  o.progress = train::ProgressMode::Off;
  o.print_report = false;
  return o;
}

struct Problem {
  std::shared_ptr<data::TensorDataset> train_set = blobs(96, 4, 3, 1, 100), val_set = blobs(48, 4, 3, 1, 200);
  std::shared_ptr<nn::Sequential> model;
  std::unique_ptr<train::ClassificationTask> task;
  data::DataLoader train_loader{train_set, testing::loader_options(16, true, 3)};  // 6 batches
  data::DataLoader val_loader{val_set, testing::loader_options(48)};
  Problem() {
    manual_seed(7);
    model = mlp(4, 16, 3);
    task = std::make_unique<train::ClassificationTask>(model);
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// ------------------------------------------------------------------ max_steps

TEST(TrainerMaxSteps, StopsAtMaxStepsMidEpochWithoutAnEpochLimit) {
  Problem p;
  optim::SGD opt(p.model->parameters(), optim::SGDOptions(0.1));
  auto o = quiet(std::nullopt);
  o.max_steps = 15;  // 6 steps an epoch: two full epochs and 3 steps of the third
  train::Trainer trainer(o);
  train::FitResult r = trainer.fit(*p.task, p.train_loader, &p.val_loader, opt);
  EXPECT_EQ(r.global_step, 15);
  EXPECT_EQ(r.step_losses.size(), 15u);
  EXPECT_EQ(r.epochs_completed, 3);
  ASSERT_EQ(r.epoch_metrics.size(), 3u);
  EXPECT_TRUE(r.epoch_metrics.back().count("val_loss"));  // the partial epoch still validates
}

TEST(TrainerMaxSteps, TheFirstLimitReachedWins) {
  Problem p;
  optim::SGD opt(p.model->parameters(), optim::SGDOptions(0.1));
  auto o = quiet(2);
  o.max_steps = 100;
  EXPECT_EQ(train::Trainer(o).fit(*p.task, p.train_loader, opt).global_step, 12);
  Problem q;
  optim::SGD opt2(q.model->parameters(), optim::SGDOptions(0.1));
  o.max_epochs = 5, o.max_steps = 4;
  EXPECT_EQ(train::Trainer(o).fit(*q.task, q.train_loader, opt2).global_step, 4);
  o.max_steps = -2;
  EXPECT_THROW(train::Trainer{o}, Error);
}

TEST(TrainerClipGradValue, ClampsEveryGradientElement) {
  Problem p;
  optim::SGD opt(p.model->parameters(), optim::SGDOptions(1.0));
  std::vector<std::vector<double>> before;
  for (const Tensor& t : p.model->parameters()) before.push_back(t.detach().to(kFloat64).to_vector<double>());
  auto o = quiet(1);
  o.max_steps = 1;
  o.clip_grad_value = 1e-4;
  train::Trainer(o).fit(*p.task, p.train_loader, opt);
  double largest = 0;
  const auto params = p.model->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto after = params[i].detach().to(kFloat64).to_vector<double>();
    for (size_t j = 0; j < after.size(); ++j) largest = std::max(largest, std::abs(after[j] - before[i][j]));
  }
  // lr 1: a step moves each weight by its clamped gradient, and some gradient exceeds 1e-4.
  EXPECT_NEAR(largest, 1e-4, 1e-7);
}

// Counts training_step calls (the Trainer's own and LBFGS's closure's).
struct CountingTask : train::Task {
  train::ClassificationTask inner;
  int calls = 0;
  explicit CountingTask(std::shared_ptr<Module> m) : inner(std::move(m)) {}
  std::shared_ptr<Module> model() override { return inner.model(); }
  train::StepOutput training_step(const data::Example& b) override {
    ++calls;
    return inner.training_step(b);
  }
  train::Metrics validation_step(const data::Example& b) override { return inner.validation_step(b); }
};

TEST(TrainerLBFGS, EachStepRunsTheBatchThroughTheClosure) {
  Problem p;
  CountingTask task(p.model);
  optim::LBFGS opt(p.model->parameters(), optim::LBFGSOptions(0.5).max_iter(3));
  auto o = quiet(2);
  train::Trainer trainer(o);
  train::FitResult r = trainer.fit(task, p.train_loader, &p.val_loader, opt);
  EXPECT_EQ(r.global_step, 12);
  const optim::ParamState* st = opt.state_of(p.model->parameters()[0]);
  ASSERT_NE(st, nullptr);
  // One call per batch by the Trainer, plus every loss evaluation of L-BFGS.
  EXPECT_EQ(task.calls, 12 + static_cast<int>(st->scalars.at("func_evals")));
  EXPECT_LT(r.epoch_metrics.back().at("train_loss_epoch"), r.step_losses.front());
  // Accumulation or low precision cannot re-run one batch: refused before training.
  Problem q;
  optim::LBFGS opt2(q.model->parameters());
  o.grad_accumulation_steps = 2;
  try {
    train::Trainer(o).fit(*q.task, q.train_loader, opt2);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LBFGS"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------- output folders

TEST(TrainerOutputs, MissingFoldersAreCreatedBeforeTraining) {
  TempDir dir("anvil-trainer-dirs");
  Problem p;
  optim::SGD opt(p.model->parameters(), optim::SGDOptions(0.1));
  auto o = quiet(1);
  o.checkpoint_path = dir.file("a/b/ckpt.safetensors");
  o.metrics_path = dir.file("logs/deep/metrics.csv");
  o.tensorboard_dir = dir.file("tb/run1");
  train::Trainer(o).fit(*p.task, p.train_loader, opt);
  EXPECT_TRUE(fs::exists(dir.file("a/b/ckpt.safetensors")));
  EXPECT_TRUE(fs::exists(dir.file("logs/deep/metrics.csv")));
  EXPECT_FALSE(fs::is_empty(dir.file("tb/run1")));
}

// Counts training steps: a fit that fails must fail before the first one.
struct CountSteps : train::Callback {
  int steps = 0;
  std::string name() const override { return "count_steps"; }
  void on_train_batch_end(train::Trainer&, train::Task&, double) override { ++steps; }
};

TEST(TrainerOutputs, AnUnwritableFolderFailsBeforeTheFirstEpochNamingThePath) {
  TempDir dir("anvil-trainer-unwritable");
  // A regular file where a folder should be: no permission trick, fails for root too.
  const std::string blocker = dir.file("not_a_dir");
  std::ofstream(blocker) << "x";
  struct Case {
    std::function<void(train::TrainerOptions&)> set;
    std::string what;
  };
  const std::vector<Case> cases = {
      {[&](auto& o) { o.checkpoint_path = blocker + "/ckpt.safetensors"; }, "checkpoint directory"},
      {[&](auto& o) { o.metrics_path = blocker + "/m.csv"; }, "metrics log directory"},
      {[&](auto& o) { o.tensorboard_dir = blocker + "/tb"; }, "TensorBoard log directory"},
      {[&](auto& o) { o.plot_path = blocker + "/sub/curves.svg"; }, "plot directory"},
  };
  for (const Case& c : cases) {
    Problem p;
    optim::SGD opt(p.model->parameters(), optim::SGDOptions(0.1));
    auto o = quiet(1);
    c.set(o);
    train::Trainer trainer(o);
    auto counter = std::make_shared<CountSteps>();
    trainer.add_callback(counter);
    try {
      trainer.fit(*p.task, p.train_loader, opt);
      ADD_FAILURE() << "expected an error for the " << c.what;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
      EXPECT_NE(msg.find(blocker), std::string::npos) << msg;
    }
    EXPECT_EQ(counter->steps, 0) << c.what;
  }
  // ModelCheckpoint's folder is checked at fit start too.
  Problem p;
  optim::SGD opt(p.model->parameters(), optim::SGDOptions(0.1));
  train::Trainer trainer(quiet(1));
  auto counter = std::make_shared<CountSteps>();
  trainer.add_callback(counter);
  trainer.add_callback(
      std::make_shared<train::ModelCheckpoint>(train::ModelCheckpointOptions{.dirpath = blocker + "/c"}));
  EXPECT_THROW(trainer.fit(*p.task, p.train_loader, opt), Error);
  EXPECT_EQ(counter->steps, 0);
}

// ----------------------------------------------------------- ModelCheckpoint

TEST(ModelCheckpoint, KeepsTheTopKByTheMonitoredMetricAndTheLast) {
  TempDir dir("anvil-model-checkpoint");
  Problem p;
  optim::SGD opt(p.model->parameters(), optim::SGDOptions(0.05));
  auto ckpt =
      std::make_shared<train::ModelCheckpoint>(train::ModelCheckpointOptions{.dirpath = dir.file("ckpt"),
                                                                             .filename = "{epoch:02d}-{val_loss:.4f}",
                                                                             .monitor = "val_loss",
                                                                             .save_top_k = 2,
                                                                             .save_last = true});
  train::Trainer trainer(quiet(5));
  trainer.add_callback(ckpt);
  train::FitResult r = trainer.fit(*p.task, p.train_loader, &p.val_loader, opt);

  // The two lowest validation losses, by the epoch metrics recorded here.
  std::vector<std::pair<double, int>> by_loss;
  for (int e = 0; e < 5; ++e) by_loss.emplace_back(r.epoch_metrics[e].at("val_loss"), e);
  std::sort(by_loss.begin(), by_loss.end());
  auto name = [&](int e) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "epoch=%02d-val_loss=%.4f.safetensors", e, r.epoch_metrics[e].at("val_loss"));
    return (fs::path(dir.file("ckpt")) / buf).string();
  };
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir.file("ckpt"))) files.insert(entry.path().string());
  const std::set<std::string> expected = {name(by_loss[0].second), name(by_loss[1].second),
                                          dir.file("ckpt/last.safetensors")};
  EXPECT_EQ(files, expected);
  EXPECT_EQ(ckpt->best_model_path(), name(by_loss[0].second));
  EXPECT_DOUBLE_EQ(ckpt->best_model_score(), by_loss[0].first);
  EXPECT_EQ(ckpt->best_k_models().size(), 2u);

  // The best checkpoint resumes: it holds the epochs completed when it was saved.
  Problem q;
  optim::SGD opt2(q.model->parameters(), optim::SGDOptions(0.05));
  auto o = quiet(by_loss[0].second + 1);
  o.resume_from = ckpt->best_model_path();
  train::FitResult resumed = train::Trainer(o).fit(*q.task, q.train_loader, opt2);
  EXPECT_EQ(resumed.epochs_completed, by_loss[0].second + 1);
  EXPECT_TRUE(resumed.step_losses.empty());  // nothing left to train
}

TEST(ModelCheckpoint, AResumedRunGoesOnRankingAgainstTheKeptFiles) {
  TempDir dir("anvil-model-checkpoint-resume");
  const train::ModelCheckpointOptions options{
      .dirpath = dir.file("ckpt"), .filename = "{epoch}", .monitor = "val_loss", .save_top_k = 2, .save_last = true};
  std::vector<double> losses;
  {
    Problem p;
    optim::SGD opt(p.model->parameters(), optim::SGDOptions(0.05));
    train::Trainer trainer(quiet(3));
    trainer.add_callback(std::make_shared<train::ModelCheckpoint>(options));
    for (const auto& m : trainer.fit(*p.task, p.train_loader, &p.val_loader, opt).epoch_metrics)
      losses.push_back(m.at("val_loss"));
  }
  Problem q;
  optim::SGD opt(q.model->parameters(), optim::SGDOptions(0.05));
  auto o = quiet(6);
  o.resume_from = dir.file("ckpt/last.safetensors");
  train::Trainer trainer(o);
  auto ckpt = std::make_shared<train::ModelCheckpoint>(options);
  trainer.add_callback(ckpt);
  for (const auto& m : trainer.fit(*q.task, q.train_loader, &q.val_loader, opt).epoch_metrics)
    losses.push_back(m.at("val_loss"));
  ASSERT_EQ(losses.size(), 6u);
  std::vector<std::pair<double, int>> ranked;
  for (int e = 0; e < 6; ++e) ranked.emplace_back(losses[e], e);
  std::sort(ranked.begin(), ranked.end());
  std::set<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir.file("ckpt"))) files.insert(entry.path().filename().string());
  const std::set<std::string> expected = {"epoch=" + std::to_string(ranked[0].second) + ".safetensors",
                                          "epoch=" + std::to_string(ranked[1].second) + ".safetensors",
                                          "last.safetensors"};
  EXPECT_EQ(files, expected);
  EXPECT_EQ(ckpt->best_k_models().size(), 2u);
  EXPECT_DOUBLE_EQ(ckpt->best_model_score(), ranked[0].first);
}

TEST(ModelCheckpoint, ModeMaxAndNoMonitorKeepTheRightFiles) {
  TempDir dir("anvil-model-checkpoint-max");
  Problem p;
  optim::SGD opt(p.model->parameters(), optim::SGDOptions(0.05));
  auto best_acc = std::make_shared<train::ModelCheckpoint>(train::ModelCheckpointOptions{
      .dirpath = dir.file("acc"), .filename = "best", .monitor = "val_accuracy", .mode = train::MonitorMode::Max});
  // A second ModelCheckpoint needs its own name for the checkpoint state.
  struct Latest : train::ModelCheckpoint {
    using ModelCheckpoint::ModelCheckpoint;
    std::string name() const override { return "latest_checkpoint"; }
  };
  auto latest = std::make_shared<Latest>(train::ModelCheckpointOptions{.dirpath = dir.file("latest")});
  train::Trainer trainer(quiet(3));
  trainer.add_callback(best_acc);
  trainer.add_callback(latest);
  train::FitResult r = trainer.fit(*p.task, p.train_loader, &p.val_loader, opt);
  double best = -1;
  for (const auto& m : r.epoch_metrics) best = std::max(best, m.at("val_accuracy"));
  EXPECT_DOUBLE_EQ(best_acc->best_model_score(), best);
  EXPECT_EQ(best_acc->best_model_path(), dir.file("acc/best.safetensors"));
  // Without a monitor only the latest is kept: epoch=2-step=18.
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir.file("latest"))) files.push_back(entry.path().filename());
  EXPECT_EQ(files, std::vector<std::string>{"epoch=2-step=18.safetensors"});

  // A monitored metric that does not exist is an error naming those that do.
  Problem q;
  optim::SGD opt2(q.model->parameters(), optim::SGDOptions(0.05));
  train::Trainer t2(quiet(1));
  t2.add_callback(std::make_shared<train::ModelCheckpoint>(
      train::ModelCheckpointOptions{.dirpath = dir.file("x"), .monitor = "val_los"}));
  try {
    t2.fit(*q.task, q.train_loader, &q.val_loader, opt2);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'val_los' is not among"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("val_loss"), std::string::npos) << e.what();
  }
}

// ------------------------------------------------- LR monitor and plateau

TEST(LearningRateMonitor, LogsEveryGroupsLrPerStepIntoTheMetricsLog) {
  TempDir dir("anvil-lr-monitor");
  Problem p;
  auto params = p.model->parameters();
  std::vector<Tensor> first(params.begin(), params.begin() + 2), rest(params.begin() + 2, params.end());
  optim::SGD opt({optim::SGD::Group{first}, optim::SGD::Group{rest, optim::SGDOptions(0.01)}}, optim::SGDOptions(0.1));
  optim::ExponentialLR sched(opt, {.gamma = 0.5});
  auto monitor = std::make_shared<train::LearningRateMonitor>();
  auto o = quiet(1);
  o.metrics_path = dir.file("metrics.jsonl");
  o.log_every_n_steps = 1;
  train::Trainer trainer(o);
  trainer.add_callback(monitor);
  trainer.fit(*p.task, p.train_loader, nullptr, opt, &sched);
  const auto& lrs = monitor->lrs();
  ASSERT_EQ(lrs.size(), 2u);
  const auto& pg1 = lrs.at("lr-SGD/pg1");
  const auto& pg2 = lrs.at("lr-SGD/pg2");
  ASSERT_EQ(pg1.size(), 6u);
  for (size_t s = 0; s < 6; ++s) {
    EXPECT_DOUBLE_EQ(pg1[s], 0.1 * std::pow(0.5, static_cast<double>(s))) << s;  // the lr step s used
    EXPECT_DOUBLE_EQ(pg2[s], 0.01 * std::pow(0.5, static_cast<double>(s))) << s;
  }
  // The metrics log has them in each step's row.
  std::istringstream lines(read_file(o.metrics_path));
  std::string line;
  int rows_with_lr = 0;
  while (std::getline(lines, line))
    if (line.find("\"lr-SGD/pg1\"") != std::string::npos && line.find("\"lr-SGD/pg2\"") != std::string::npos)
      ++rows_with_lr;
  EXPECT_EQ(rows_with_lr, 6);
}

// Trains for real but reports a flat validation loss.
struct FlatValidation : train::Task {
  train::ClassificationTask inner;
  explicit FlatValidation(std::shared_ptr<Module> m) : inner(std::move(m)) {}
  std::shared_ptr<Module> model() override { return inner.model(); }
  train::StepOutput training_step(const data::Example& b) override { return inner.training_step(b); }
  train::Metrics validation_step(const data::Example&) override { return {{"loss", 1.0}}; }
};

TEST(PlateauScheduler, ReducesTheLrWhenValidationStalls) {
  Problem p;
  FlatValidation task(p.model);
  optim::SGD opt(p.model->parameters(), optim::SGDOptions(0.1));
  auto plateau = std::make_shared<optim::ReduceLROnPlateau>(opt, optim::ReduceLROnPlateauOptions{.patience = 1});
  train::Trainer trainer(quiet(4));
  trainer.add_callback(std::make_shared<train::PlateauScheduler>(plateau, "val_loss"));
  train::FitResult r = trainer.fit(task, p.train_loader, &p.val_loader, opt);
  // Epoch 1 sets the best; 2 is one bad epoch; after 3 (two, more than patience) the lr drops.
  ASSERT_EQ(r.step_lrs.size(), 24u);
  EXPECT_DOUBLE_EQ(r.step_lrs[17], 0.1);
  EXPECT_NEAR(r.step_lrs[18], 0.01, 1e-15);
  EXPECT_NEAR(opt.lr(), 0.01, 1e-15);
}

// ---------------------------------------------------------------- TensorBoard

// An independent reading of the format: bitwise CRC-32C, little-endian
// fields, protobuf varints and keys.
uint32_t crc32c_bitwise(const std::string& s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}
uint32_t masked(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }
template <class T> T read_le(const std::string& s, size_t at) {
  T v{};
  EXPECT_LE(at + sizeof(T), s.size());
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}
uint64_t varint(const std::string& s, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto b = static_cast<unsigned char>(s.at(at++));
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
}

struct Scalar {
  std::string tag;
  float value = 0;
  int64_t step = 0;
  double wall_time = 0;
};

// Records of a tfevents file, each checked; scalars decoded from Event protos.
std::vector<Scalar> parse_events(const std::string& bytes, std::string* file_version) {
  std::vector<Scalar> out;
  size_t at = 0;
  while (at < bytes.size()) {
    const uint64_t len = read_le<uint64_t>(bytes, at);
    EXPECT_EQ(read_le<uint32_t>(bytes, at + 8), masked(crc32c_bitwise(bytes.substr(at, 8)))) << "length crc";
    const std::string data = bytes.substr(at + 12, len);
    EXPECT_EQ(data.size(), len);
    EXPECT_EQ(read_le<uint32_t>(bytes, at + 12 + len), masked(crc32c_bitwise(data))) << "data crc";
    at += 12 + len + 4;
    Scalar sc;
    bool has_summary = false;
    size_t p = 0;
    while (p < data.size()) {
      const uint64_t key = varint(data, p);
      const auto field = key >> 3, wire = key & 7;
      if (field == 1 && wire == 1) {
        const uint64_t bits = read_le<uint64_t>(data, p);
        std::memcpy(&sc.wall_time, &bits, 8);
        p += 8;
      } else if (field == 2 && wire == 0) {
        sc.step = static_cast<int64_t>(varint(data, p));
      } else if (field == 3 && wire == 2) {
        const uint64_t n = varint(data, p);
        *file_version = data.substr(p, n);
        p += n;
      } else if (field == 5 && wire == 2) {
        const uint64_t n = varint(data, p);
        const std::string summary = data.substr(p, n);
        p += n;
        size_t q = 0;
        EXPECT_EQ(varint(summary, q), (1u << 3) | 2u);  // Summary.value
        const uint64_t vn = varint(summary, q);
        const std::string value = summary.substr(q, vn);
        size_t r = 0;
        EXPECT_EQ(varint(value, r), (1u << 3) | 2u);  // Value.tag
        const uint64_t tn = varint(value, r);
        sc.tag = value.substr(r, tn);
        r += tn;
        EXPECT_EQ(varint(value, r), (2u << 3) | 5u);  // Value.simple_value
        const uint32_t fbits = read_le<uint32_t>(value, r);
        std::memcpy(&sc.value, &fbits, 4);
        has_summary = true;
      } else {
        ADD_FAILURE() << "unexpected Event field " << field << " wire type " << wire;
        return out;
      }
    }
    if (has_summary) out.push_back(sc);
  }
  return out;
}

TEST(TensorBoard, Crc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(train::crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(train::crc32c(""), 0u);
  const std::string s = "tfevents record";
  EXPECT_EQ(train::masked_crc32c(s), masked(crc32c_bitwise(s)));
}

TEST(TensorBoard, WriterRecordsParseBack) {
  TempDir dir("anvil-tensorboard");
  std::string path;
  {
    train::TensorBoardWriter tb(dir.file("run"));
    path = tb.path();
    tb.add_scalar("train_loss", 0.75, 3, 1234.5);
    tb.add_scalar("lr-SGD/pg1", 1e-3, 300);
  }
  EXPECT_NE(fs::path(path).filename().string().find("events.out.tfevents."), std::string::npos);
  std::string version;
  const std::vector<Scalar> scalars = parse_events(read_file(path), &version);
  EXPECT_EQ(version, "brain.Event:2");
  ASSERT_EQ(scalars.size(), 2u);
  EXPECT_EQ(scalars[0].tag, "train_loss");
  EXPECT_EQ(scalars[0].value, 0.75f);
  EXPECT_EQ(scalars[0].step, 3);
  EXPECT_EQ(scalars[0].wall_time, 1234.5);
  EXPECT_EQ(scalars[1].tag, "lr-SGD/pg1");
  EXPECT_EQ(scalars[1].value, 1e-3f);
  EXPECT_EQ(scalars[1].step, 300);
}

TEST(TensorBoard, TheTrainerWritesTheMetricsLogRows) {
  TempDir dir("anvil-tensorboard-trainer");
  Problem p;
  optim::SGD opt(p.model->parameters(), optim::SGDOptions(0.1));
  auto o = quiet(2);
  o.tensorboard_dir = dir.file("tb");
  o.log_every_n_steps = 2;
  train::Trainer trainer(o);
  train::FitResult r = trainer.fit(*p.task, p.train_loader, &p.val_loader, opt);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir.file("tb"))) files.push_back(entry.path());
  ASSERT_EQ(files.size(), 1u);
  std::string version;
  const std::vector<Scalar> scalars = parse_events(read_file(files[0].string()), &version);
  std::vector<int64_t> loss_steps;
  std::vector<float> losses;
  int val_rows = 0;
  for (const Scalar& s : scalars) {
    if (s.tag == "train_loss") loss_steps.push_back(s.step), losses.push_back(s.value);
    if (s.tag == "val_loss") {
      ++val_rows;
      EXPECT_FLOAT_EQ(s.value,
                      static_cast<float>(r.epoch_metrics.at(static_cast<size_t>(val_rows - 1)).at("val_loss")));
    }
  }
  EXPECT_EQ(loss_steps, (std::vector<int64_t>{2, 4, 6, 8, 10, 12}));
  for (size_t i = 0; i < losses.size(); ++i) EXPECT_FLOAT_EQ(losses[i], static_cast<float>(r.step_losses[2 * i + 1]));
  EXPECT_EQ(val_rows, 2);
}

}  // namespace
}  // namespace anvil
