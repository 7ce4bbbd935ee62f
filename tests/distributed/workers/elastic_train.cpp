// A rank of an elastic job (anvil-run --max-restarts): trains its own small
// model with the Trainer, checkpointing every epoch and resuming from its
// checkpoint when one exists. With an abort step, rank 1 aborts (SIGABRT) at
// that optimizer step on the first attempt only (TORCHELASTIC_RESTART_COUNT
// 0), as a crash mid-epoch would. Writes its final parameters to
// <dir>/final_rank<R>.bin for the test to compare with an uninterrupted run.
//
//   dist_worker_elastic_train <dir> <abort_step or 0>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "nn/optim/optim.h"
#include "nn/train/train.h"
#include "tests/nn/train/train_test_util.h"

using namespace anvil;
using namespace anvil::nn;

namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

struct AbortAt : train::Callback {
  int64_t step;
  explicit AbortAt(int64_t s) : step(s) {}
  std::string name() const override { return "abort_at"; }
  void on_train_batch_end(train::Trainer& t, train::Task&, double) override {
    if (t.global_step() == step) {
      std::cout << "aborting at step " << step << std::endl;
      std::abort();
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: dist_worker_elastic_train <dir> <abort_step>\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int64_t abort_step = std::atoll(argv[2]);
  const int rank = env_int("RANK");
  const int restart = env_int("TORCHELASTIC_RESTART_COUNT");

  auto set = testing::blobs(96, 6, 3, 21 + rank, 22);
  manual_seed(100 + static_cast<uint64_t>(rank));
  auto model = testing::mlp(6, 16, 3, /*dropout=*/0.3);  // dropout: the RNG state must resume too
  train::ClassificationTask task(model);
  optim::AdamW opt(model->parameters(), {.lr = 1e-2});
  optim::CosineAnnealingLR sched(opt, {.total_steps = 24, .warmup_steps = 3});
  data::DataLoader loader(set, testing::loader_options(16, /*shuffle=*/true, /*seed=*/5));

  train::TrainerOptions o;
  o.max_epochs = 4;
  o.device = Device::cpu();
  o.progress = train::ProgressMode::Off;
  o.print_report = false;
  o.checkpoint_path = (dir / ("rank" + std::to_string(rank) + ".ckpt")).string();
  if (std::filesystem::exists(o.checkpoint_path)) {
    o.resume_from = o.checkpoint_path;
    std::cout << "restart " << restart << ": resuming from " << o.resume_from << std::endl;
  }
  train::Trainer trainer(o);
  if (abort_step > 0 && rank == 1 && restart == 0) trainer.add_callback(std::make_shared<AbortAt>(abort_step));
  trainer.fit(task, loader, nullptr, opt, &sched);

  std::ofstream out(dir / ("final_rank" + std::to_string(rank) + ".bin"), std::ios::binary);
  for (const Tensor& p : model->parameters()) {
    auto v = p.detach().to_vector<float>();
    out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  }
  std::cout << "OK finished at step " << trainer.global_step() << std::endl;
  return 0;
}
