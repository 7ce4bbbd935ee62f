// ModelCheckpoint on a file system that fills up during training (a private
// tmpfs, so the kernel's ENOSPC): fit stops with an error naming the file and
// the cause, the checkpoints already kept stay loadable and kept, nothing
// partial or temporary is left, and the run resumes once there is room.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "nn/optim/optim.h"
#include "nn/serialize/checkpoint.h"
#include "nn/train/train.h"
#include "tests/nn/serialize/private_tmpfs.h"
#include "tests/nn/train/train_test_util.h"

namespace anvil {
namespace {

using namespace anvil::nn;
namespace fs = std::filesystem;

train::TrainerOptions quiet(int64_t epochs) {
  train::TrainerOptions o;
  o.max_epochs = epochs;
  o.device = Device::cpu();
  o.progress = train::ProgressMode::Off;
  o.print_report = false;
  return o;
}

// Fills the file system of `dir` at the end of the first epoch (after the
// callbacks before it have saved): writes a ballast file until the kernel
// says it is full.
struct FillDiskAfterFirstEpoch : train::Callback {
  explicit FillDiskAfterFirstEpoch(fs::path d) : dir(std::move(d)) {}
  std::string name() const override { return "fill_disk"; }
  void on_train_epoch_end(train::Trainer& trainer, train::Task&, const train::Metrics&) override {
    if (trainer.current_epoch() != 0) return;
    const int fd = ::open((dir / "ballast").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const std::vector<char> chunk(4096, 'x');
    ssize_t w = 0;
    while ((w = ::write(fd, chunk.data(), chunk.size())) > 0) ballast_bytes += w;
    stopped_by = errno;
    ::close(fd);
  }
  fs::path dir;
  int64_t ballast_bytes = 0;
  int stopped_by = 0;
};

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

TEST(ModelCheckpointFullDisk, FitStopsWithAClearErrorAndKeepsTheCheckpointsItHad) {
  anvil::testing::PrivateTmpfs disk(1 << 20);
  if (!disk.ok()) GTEST_SKIP() << disk.why_not();
  const fs::path dir = disk.path() / "ckpt";
  auto train_set = anvil::testing::blobs(96, 4, 3, 1, 100);
  data::DataLoader loader(train_set, anvil::testing::loader_options(16, true, 3));  // 6 steps an epoch
  manual_seed(7);
  auto model = anvil::testing::mlp(4, 16, 3);
  train::ClassificationTask task(model);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.05));
  // No monitor: the latest checkpoint ranks best, so epoch 1's would replace epoch 0's.
  auto ckpt = std::make_shared<train::ModelCheckpoint>(
      train::ModelCheckpointOptions{.dirpath = dir.string(), .save_top_k = 1, .save_last = true});
  auto filler = std::make_shared<FillDiskAfterFirstEpoch>(dir);
  train::Trainer trainer(quiet(3));
  trainer.add_callback(ckpt);
  trainer.add_callback(filler);

  std::string message;
  try {
    trainer.fit(task, loader, opt);
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_EQ(filler->stopped_by, ENOSPC) << "the ballast did not fill the disk: " << std::strerror(filler->stopped_by);
  const std::string first = (dir / "epoch=0-step=6.safetensors").string();
  const std::string second = (dir / "epoch=1-step=12.safetensors").string();
  EXPECT_NE(message.find(second), std::string::npos) << message;
  EXPECT_NE(message.find("No space left on device"), std::string::npos) << message;

  // Epoch 0's checkpoints are whole, still kept, and still ranked best.
  EXPECT_EQ(names_in(dir), (std::set<std::string>{"epoch=0-step=6.safetensors", "last.safetensors", "ballast"}));
  EXPECT_EQ(serialize::load_checkpoint(first).epoch, 1);
  EXPECT_EQ(serialize::load_checkpoint(first).step, 6);
  EXPECT_EQ(serialize::load_checkpoint(dir / "last.safetensors").epoch, 1);
  EXPECT_EQ(ckpt->best_model_path(), first);
  EXPECT_EQ(ckpt->best_k_models().size(), 1u);

  // With room again, the run resumes from the last checkpoint and finishes.
  fs::remove(dir / "ballast");
  manual_seed(7);
  auto model2 = anvil::testing::mlp(4, 16, 3);
  train::ClassificationTask task2(model2);
  optim::SGD opt2(model2->parameters(), optim::SGDOptions(0.05));
  auto options = quiet(3);
  options.resume_from = (dir / "last.safetensors").string();
  train::Trainer resumed(options);
  resumed.add_callback(std::make_shared<train::ModelCheckpoint>(
      train::ModelCheckpointOptions{.dirpath = dir.string(), .save_top_k = 1, .save_last = true}));
  const train::FitResult r = resumed.fit(task2, loader, opt2);
  EXPECT_EQ(r.epochs_completed, 3);
  EXPECT_EQ(serialize::load_checkpoint(dir / "epoch=2-step=18.safetensors").step, 18);
  EXPECT_EQ(serialize::load_checkpoint(dir / "last.safetensors").epoch, 3);
}

}  // namespace
}  // namespace anvil
