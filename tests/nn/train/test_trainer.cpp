// Trainer: fitting, accumulation, callbacks, logs, plots, precision.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kernels/cuda_info.h"
#include "nn/optim/optim.h"
#include "nn/train/train.h"
#include "tests/nn/train/train_test_util.h"

namespace anvil {
namespace {

using namespace anvil::nn;
using testing::blobs;
using testing::mlp;
using testing::TempDir;

train::TrainerOptions quiet(int64_t epochs) {
  train::TrainerOptions o;
  o.max_epochs = epochs;
  o.device = Device::cpu();
  o.progress = train::ProgressMode::Off;
  o.print_report = false;
  return o;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Trainer, FitsSyntheticClassificationToHighAccuracy) {
  auto train_set = blobs(512, 8, 3, 1, 100);
  auto val_set = blobs(256, 8, 3, 1, 200);  // same centres, fresh points
  manual_seed(7);
  auto model = mlp(8, 32, 3);
  train::ClassificationTask task(model);
  optim::AdamW opt(model->parameters(), {.lr = 1e-2});
  data::DataLoader train_loader(train_set, testing::loader_options(32, true, 3));
  data::DataLoader val_loader(val_set, testing::loader_options(100));  // 100, 100, 56: weighted mean

  train::Metrics before = train::Trainer(quiet(1)).validate(task, val_loader);
  train::Trainer trainer(quiet(8));
  train::FitResult r = trainer.fit(task, train_loader, &val_loader, opt);

  EXPECT_EQ(r.epochs_completed, 8);
  EXPECT_EQ(r.global_step, 8 * 16);
  ASSERT_EQ(r.step_losses.size(), 128u);
  ASSERT_EQ(r.epoch_metrics.size(), 8u);
  EXPECT_LT(before.at("val_accuracy"), 0.8);
  EXPECT_GT(r.epoch_metrics.back().at("val_accuracy"), 0.95);
  EXPECT_LT(r.epoch_metrics.back().at("val_loss"), r.epoch_metrics.front().at("val_loss"));
  EXPECT_LT(r.epoch_metrics.back().at("train_loss_epoch"), 0.3);
  // The model's own accuracy, computed here independently of the Trainer.
  NoGradGuard ng;
  model->eval();
  Tensor pred = argmax(model->forward(val_set->data()), 1);
  auto p = pred.to_vector<int64_t>();
  auto y = val_set->targets().to_vector<int64_t>();
  int correct = 0;
  for (size_t i = 0; i < p.size(); ++i) correct += p[i] == y[i];
  EXPECT_NEAR(correct / 256.0, r.epoch_metrics.back().at("val_accuracy"), 1e-9);

  train::Metrics t = trainer.test(task, val_loader);
  EXPECT_NEAR(t.at("test_accuracy"), correct / 256.0, 1e-9);
  EXPECT_TRUE(t.count("test_loss"));
}

// Accumulating k = 2 batches of b with a mean loss (divided by k) equals one
// batch of 2b: SGD without momentum sees the same gradient.
TEST(Trainer, GradientAccumulationMatchesLargerBatch) {
  auto set = blobs(96, 6, 3, 2);
  auto run = [&](int64_t batch, int64_t k) {
    manual_seed(11);
    auto model = mlp(6, 16, 3);
    train::ClassificationTask task(model);
    optim::SGD opt(model->parameters(), {.lr = 0.1});
    data::DataLoader loader(set, testing::loader_options(batch));
    auto o = quiet(3);
    o.grad_accumulation_steps = k;
    train::FitResult r = train::Trainer(o).fit(task, loader, opt);
    return std::make_pair(model->state_dict(), r);
  };
  auto [big, big_run] = run(16, 1);
  auto [acc, acc_run] = run(8, 2);
  EXPECT_EQ(big_run.global_step, 18);
  EXPECT_EQ(acc_run.global_step, 18);
  ASSERT_EQ(big_run.step_losses.size(), acc_run.step_losses.size());
  for (size_t i = 0; i < big_run.step_losses.size(); ++i)
    EXPECT_NEAR(big_run.step_losses[i], acc_run.step_losses[i], 1e-5) << "step " << i;
  bool changed = false;
  manual_seed(11);
  auto init = mlp(6, 16, 3)->state_dict();
  for (size_t i = 0; i < big.size(); ++i) {
    auto a = big[i].second.to_vector<float>(), b = acc[i].second.to_vector<float>(),
         c = init[i].second.to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j) {
      EXPECT_NEAR(a[j], b[j], 1e-5) << big[i].first << "[" << j << "]";
      changed = changed || std::abs(a[j] - c[j]) > 1e-3;
    }
  }
  EXPECT_TRUE(changed) << "training did not move the parameters";
  // And k = 2 with batch b is not the same as k = 1 with batch b.
  auto [small, small_run] = run(8, 1);
  EXPECT_EQ(small_run.global_step, 36);
}

TEST(Trainer, ClipsGradientsAndStepsTheScheduler) {
  auto set = blobs(64, 4, 2, 3);
  manual_seed(5);
  auto model = mlp(4, 8, 2);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), {.lr = 0.5});
  optim::StepLR sched(opt, {.step_size = 3, .gamma = 0.5});
  data::DataLoader loader(set, testing::loader_options(16));
  struct GradNorms : train::Callback {
    std::vector<double> lrs;
    void on_train_batch_end(train::Trainer& t, train::Task&, double) override { lrs.push_back(t.last_lr()); }
  };
  auto cb = std::make_shared<GradNorms>();
  auto o = quiet(2);
  o.clip_grad_norm = 1e-3;  // tiny: every step is clipped to this norm
  train::Trainer trainer(o);
  trainer.add_callback(cb);
  auto before = model->state_dict();
  std::vector<std::vector<float>> w0;
  for (auto& [n, t] : before) w0.push_back(t.clone().to_vector<float>());
  train::FitResult r = trainer.fit(task, loader, nullptr, opt, &sched);
  ASSERT_EQ(r.step_lrs.size(), 8u);
  const double expected[] = {0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125};
  for (size_t i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(r.step_lrs[i], expected[i]);
  EXPECT_EQ(cb->lrs, r.step_lrs);
  // Each update moves the parameters by lr * (a gradient of norm <= 1e-3).
  double moved_sq = 0;
  auto after = model->state_dict();
  for (size_t i = 0; i < after.size(); ++i) {
    auto a = after[i].second.to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j) moved_sq += (a[j] - w0[i][j]) * (a[j] - w0[i][j]);
  }
  const double bound = 1e-3 * (0.5 * 3 + 0.25 * 3 + 0.125 * 2);
  EXPECT_LE(std::sqrt(moved_sq), bound * 1.001);
  EXPECT_GT(std::sqrt(moved_sq), bound * 0.5);
}

TEST(Trainer, EarlyStoppingStopsWhenTheMetricStalls) {
  auto set = blobs(64, 4, 2, 4);
  manual_seed(6);
  auto model = mlp(4, 8, 2);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), {.lr = 0.0});  // lr 0: val_loss never improves after epoch 0
  data::DataLoader loader(set, testing::loader_options(32));
  auto stop = std::make_shared<train::EarlyStopping>(train::EarlyStoppingOptions{.monitor = "val_loss", .patience = 2});
  train::Trainer trainer(quiet(20));
  trainer.add_callback(stop);
  train::FitResult r = trainer.fit(task, loader, &loader, opt);
  // Epoch 0 sets the best; epochs 1 and 2 do not improve: stop after epoch 2.
  EXPECT_TRUE(r.stopped_early);
  EXPECT_EQ(r.epochs_completed, 3);
  EXPECT_TRUE(stop->stopped());
  EXPECT_EQ(stop->stopped_epoch(), 2);
  EXPECT_EQ(stop->wait_count(), 2);
}

TEST(Trainer, EarlyStoppingKeepsGoingWhileImprovingAndNamesAMissingMetric) {
  auto set = blobs(128, 4, 2, 5);
  manual_seed(6);
  auto model = mlp(4, 8, 2);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), {.lr = 0.05});
  data::DataLoader loader(set, testing::loader_options(32));
  auto stop = std::make_shared<train::EarlyStopping>(
      train::EarlyStoppingOptions{.monitor = "val_accuracy", .mode = train::MonitorMode::Max, .patience = 50});
  train::Trainer trainer(quiet(4));
  trainer.add_callback(stop);
  train::FitResult r = trainer.fit(task, loader, &loader, opt);
  EXPECT_FALSE(r.stopped_early);
  EXPECT_EQ(r.epochs_completed, 4);

  train::Trainer typo(quiet(2));
  typo.add_callback(std::make_shared<train::EarlyStopping>(train::EarlyStoppingOptions{.monitor = "val_los"}));
  try {
    typo.fit(task, loader, &loader, opt);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("val_los"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("val_loss"), std::string::npos) << e.what();
  }
}

TEST(Trainer, WritesMetricsCsvRowsAndPlot) {
  TempDir dir("anvil-trainer-csv");
  auto set = blobs(64, 4, 2, 6);
  manual_seed(1);
  auto model = mlp(4, 8, 2);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  data::DataLoader loader(set, testing::loader_options(16));
  auto o = quiet(3);
  o.log_every_n_steps = 2;
  o.metrics_path = dir.file("metrics.csv");
  o.plot_path = dir.file("curves.svg");
  train::FitResult r = train::Trainer(o).fit(task, loader, &loader, opt);

  std::istringstream csv(read_file(o.metrics_path));
  std::string header, line;
  std::getline(csv, header);
  EXPECT_EQ(header.rfind("epoch,step,", 0), 0u) << header;
  for (const char* col : {"train_loss", "lr", "time", "samples_per_s", "val_loss", "val_accuracy", "train_loss_epoch"})
    EXPECT_NE(header.find(col), std::string::npos) << col << " missing from " << header;
  std::vector<std::string> rows;
  while (std::getline(csv, line)) rows.push_back(line);
  // 12 steps logged every 2 -> 6 step rows, plus 3 epoch rows.
  ASSERT_EQ(rows.size(), 9u);
  // Columns: count commas to see every row has the full width.
  const auto commas = std::count(header.begin(), header.end(), ',');
  for (auto& row : rows) EXPECT_EQ(std::count(row.begin(), row.end(), ','), commas) << row;
  EXPECT_EQ(rows[0].rfind("0,2,", 0), 0u) << rows[0];  // epoch 0, step 2

  const std::string svg = read_file(o.plot_path);
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("train_loss"), std::string::npos);
  EXPECT_NE(svg.find("val_accuracy"), std::string::npos);
  EXPECT_EQ(r.step_losses.size(), 12u);
}

TEST(Trainer, WritesMetricsJsonLinesAndPng) {
  TempDir dir("anvil-trainer-jsonl");
  auto set = blobs(64, 4, 2, 7);
  manual_seed(1);
  auto model = mlp(4, 8, 2);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  data::DataLoader loader(set, testing::loader_options(16));
  auto o = quiet(2);
  o.log_every_n_steps = 1;
  o.metrics_path = dir.file("metrics.jsonl");
  o.plot_path = dir.file("curves.png");
  train::FitResult r = train::Trainer(o).fit(task, loader, &loader, opt);
  std::istringstream in(read_file(o.metrics_path));
  std::string line;
  int step_rows = 0, epoch_rows = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("train_loss")) {
      ++step_rows;
      EXPECT_DOUBLE_EQ(j["train_loss"].get<double>(), r.step_losses[static_cast<size_t>(j["step"].get<int>() - 1)]);
      EXPECT_DOUBLE_EQ(j["lr"].get<double>(), 0.1);
    } else {
      ++epoch_rows;
      EXPECT_TRUE(j.contains("val_accuracy"));
    }
  }
  EXPECT_EQ(step_rows, 8);
  EXPECT_EQ(epoch_rows, 2);
  const std::string png = read_file(o.plot_path);
  ASSERT_GT(png.size(), 1000u);
  EXPECT_EQ(png.substr(1, 3), "PNG");
}

TEST(Trainer, LoaderWorkersGiveTheSameRun) {
  auto set = blobs(128, 6, 3, 12);
  auto run = [&](int workers) {
    manual_seed(4);
    auto model = mlp(6, 16, 3);
    train::ClassificationTask task(model);
    optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
    auto lo = testing::loader_options(16, true, 9);
    lo.num_workers = workers;
    data::DataLoader loader(set, lo);
    return train::Trainer(quiet(3)).fit(task, loader, opt).step_losses;
  };
  auto serial = run(0);
  auto threaded = run(2);
  ASSERT_EQ(serial.size(), 24u);
  EXPECT_EQ(serial, threaded);
}

TEST(Trainer, PrintsPlainProgressLinesAndTheReport) {
  auto set = blobs(64, 4, 2, 13);
  auto model = mlp(4, 8, 2);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  data::DataLoader loader(set, testing::loader_options(8));
  std::ostringstream out;
  auto o = quiet(2);
  o.progress = train::ProgressMode::Lines;
  o.log_every_n_steps = 4;
  o.print_report = true;
  o.out = &out;
  train::FitResult r = train::Trainer(o).fit(task, loader, &loader, opt);
  const std::string text = out.str();
  // Steps 4, 8, 12, 16 and two epoch lines, then the report.
  EXPECT_NE(text.find("epoch 1 step 4 batch 4/8  loss "), std::string::npos) << text;
  EXPECT_NE(text.find("epoch 2 step 16 batch 8/8"), std::string::npos) << text;
  EXPECT_NE(text.find("epoch 2 done in"), std::string::npos) << text;
  EXPECT_NE(text.find("val_accuracy"), std::string::npos) << text;
  EXPECT_NE(text.find("==== anvil training report ===="), std::string::npos) << text;
  EXPECT_NE(text.find("Steps: 16 in"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_EQ(r.report, text.substr(text.find("==== anvil")));
}

// On a GPU (real, or the emulated GPU): batches go through pinned memory with
// non_blocking copies, and the report times the GPU wait and shows the CUDA
// allocator's memory. (NVML readings exist only on a real GPU with a driver.)
TEST(Trainer, OnCudaTheReportTimesTheGpuAndItsMemory) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device (no GPU, and not the emulated-GPU build)";
  auto set = blobs(64, 4, 2, 13);
  auto model = mlp(4, 8, 2);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  auto loader_options = testing::loader_options(8);
  loader_options.pin_memory = true;
  data::DataLoader loader(set, loader_options);
  std::ostringstream out;
  auto o = quiet(2);
  o.device = Device::cuda(0);
  o.print_report = true;
  o.out = &out;
  train::FitResult r = train::Trainer(o).fit(task, loader, &loader, opt);
  EXPECT_EQ(model->device(), Device::cuda(0));
  EXPECT_EQ(r.global_step, 16);
  EXPECT_LT(r.step_losses.back(), r.step_losses.front()) << "the model learned nothing on the GPU";
  EXPECT_NE(r.report.find("waiting for the GPU (reading results back)"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("(cuda:0 allocator;"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("pinned memory"), std::string::npos) << r.report;
}

TEST(Trainer, RejectsBadOptionsAndEmptyLoaders) {
  auto bad = [](auto edit) {
    train::TrainerOptions o;
    edit(o);
    EXPECT_THROW(train::Trainer{o}, Error);
  };
  bad([](auto& o) { o.grad_accumulation_steps = 0; });
  bad([](auto& o) { o.max_epochs = -1; });
  bad([](auto& o) { o.clip_grad_norm = -1; });
  bad([](auto& o) { o.log_every_n_steps = 0; });
  bad([](auto& o) { o.profile_path = "x.json"; });

  auto set = blobs(4, 4, 2, 8);
  auto model = mlp(4, 8, 2);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  data::DataLoader loader(set, testing::loader_options(8, false, 0, true));
  EXPECT_THROW(train::Trainer(quiet(1)).fit(task, loader, opt), Error);
}

TEST(Trainer, DefaultDeviceIsTheBestAvailable) {
  train::Trainer t;
  EXPECT_EQ(t.device(), train::best_device());
  if (!cuda::is_available()) {
    EXPECT_TRUE(t.device().is_cpu());
  }
}

// bf16 compute with fp32 masters: on CPU the kernels compute bf16 in float,
// so this runs everywhere. The optimizer's parameters stay float32.
TEST(Trainer, Bf16PrecisionTrainsWithFloat32Masters) {
  auto set = blobs(256, 8, 3, 9);
  manual_seed(3);
  auto model = mlp(8, 32, 3);
  train::ClassificationTask task(model);
  optim::AdamW opt(model->parameters(), {.lr = 1e-2});
  data::DataLoader loader(set, testing::loader_options(32, true));
  auto o = quiet(6);
  o.precision = train::Precision::BF16;
  o.grad_accumulation_steps = 2;
  train::FitResult r = train::Trainer(o).fit(task, loader, &loader, opt);
  for (const Tensor& p : model->parameters()) EXPECT_EQ(p.dtype(), kFloat32);
  for (const Tensor& p : opt.parameters()) {
    const optim::ParamState* s = opt.state_of(p);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->buffers.at("exp_avg").dtype(), kFloat32);
  }
  EXPECT_GT(r.epoch_metrics.back().at("val_accuracy"), 0.9);
  EXPECT_LT(r.step_losses.back(), r.step_losses.front());
}

TEST(Trainer, Fp16PrecisionUsesTheGradScaler) {
  auto set = blobs(128, 8, 3, 10);
  manual_seed(3);
  auto model = mlp(8, 16, 3);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  data::DataLoader loader(set, testing::loader_options(32));
  auto o = quiet(4);
  o.precision = train::Precision::FP16;
  train::Trainer trainer(o);
  train::FitResult r = trainer.fit(task, loader, &loader, opt);
  ASSERT_NE(trainer.grad_scaler(), nullptr);
  EXPECT_EQ(r.global_step, 16);
  // Overflowing steps (if any) were skipped and halved the scale; with
  // growth_interval 2000 it never grew.
  EXPECT_LT(r.skipped_steps, r.global_step);
  EXPECT_DOUBLE_EQ(trainer.grad_scaler()->get_scale(), 65536.0 * std::pow(0.5, static_cast<double>(r.skipped_steps)));
  EXPECT_LT(r.step_losses.back(), r.step_losses.front());
  for (const Tensor& p : model->parameters()) EXPECT_EQ(p.dtype(), kFloat32);
}

TEST(Trainer, ProfilesTheChosenSteps) {
  TempDir dir("anvil-trainer-prof");
  auto set = blobs(64, 4, 2, 11);
  auto model = mlp(4, 8, 2);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  data::DataLoader loader(set, testing::loader_options(8));
  auto o = quiet(1);
  o.profile_path = dir.file("trace.json");
  o.profile_steps = {2, 5};
  train::Trainer(o).fit(task, loader, opt);
  auto j = nlohmann::json::parse(read_file(o.profile_path));
  std::map<std::string, int> counts;
  for (const auto& e : j["traceEvents"]) {
    EXPECT_EQ(e["ph"], "X");
    EXPECT_GE(e["dur"].get<int64_t>(), 0);
    counts[e["name"].get<std::string>()]++;
  }
  EXPECT_EQ(counts["step"], 3);
  EXPECT_EQ(counts["training_step"], 3);
  EXPECT_EQ(counts["backward"], 3);
  EXPECT_EQ(counts["optimizer_step"], 3);
  EXPECT_EQ(counts["data_wait"], 3);
}

}  // namespace
}  // namespace anvil
