// The main job: Fashion-MNIST (Debian's dataset-fashion-mnist) with an MLP or
// a small CNN, trained by the Trainer on the best device present.
//
//   build/bin/fashion_mnist --model cnn            # the CNN, 5 epochs
//   build/bin/fashion_mnist --model mlp --epochs 5 --batch-size 128
//   build/bin/anvil-run --nproc-per-node 2 build/bin/fashion_mnist --model mlp
//   build/bin/anvil-run --nproc-per-node 2 build/bin/fashion_mnist --model mlp --comm-hook powersgd
//
// Started by anvil-run with WORLD_SIZE > 1 it trains data-parallel: the
// model is wrapped in DistributedDataParallel, each rank reads its own shard
// of every epoch (DistributedSampler) and takes batch-size / WORLD_SIZE
// examples per step, so the ranks together take the same steps as one
// process would. Every rank evaluates the whole test set; only rank 0 prints.
// --comm-hook compresses DDP's gradient buckets (fp16, bf16, or PowerSGD at
// --powersgd-rank after --powersgd-start plain steps); the JSON line then
// reports the bytes each rank sent per step.
//
// The last line printed is one JSON object with the results.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <anvil/anvil.h>

#include "distributed/comm_hooks/compress_hooks.h"
#include "distributed/comm_hooks/powersgd.h"
#include "distributed/ddp/ddp.h"

#include "samples/models.h"

using namespace anvil;
using namespace anvil::nn;

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

train::Precision parse_precision(const std::string& amp) {
  if (amp == "none" || amp == "fp32") return train::Precision::FP32;
  if (amp == "bf16") return train::Precision::BF16;
  if (amp == "fp16") return train::Precision::FP16;
  fail("fashion_mnist: --amp must be none, bf16 or fp16, got '", amp, "'");
}

void register_comm_hook(distributed::DistributedDataParallel& ddp, const std::string& hook,
                        const distributed::PowerSGDOptions& powersgd) {
  if (hook == "fp16")
    ddp.register_comm_hook(distributed::fp16_compress_hook);
  else if (hook == "bf16")
    ddp.register_comm_hook(distributed::bf16_compress_hook);
  else if (hook == "powersgd")
    ddp.register_comm_hook(std::make_shared<distributed::PowerSGDState>(powersgd), distributed::powersgd_hook);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fashion-MNIST with anvil"};
  std::string model_name = "cnn", device_name, amp = "none", checkpoint, resume, metrics, plot, comm_hook = "none";
  distributed::PowerSGDOptions powersgd{.matrix_approximation_rank = 2, .start_powerSGD_iter = 100};
  std::string data_dir = data::kFashionMnistDir;
  int64_t epochs = 5, batch_size = 64, limit_train = 0, limit_test = 0, workers = 2;
  double lr = 1e-3;
  uint64_t seed = 0;
  app.add_option("--model", model_name, "mlp or cnn")->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--device", device_name, "cpu, cuda or cuda:N (default: the best present)");
  app.add_option("--epochs", epochs);
  app.add_option("--batch-size", batch_size, "examples per optimizer step, over all ranks together");
  app.add_option("--lr", lr, "AdamW learning rate");
  app.add_option("--amp", amp, "mixed precision: none, bf16 or fp16");
  app.add_option("--checkpoint", checkpoint, "write a checkpoint here after every epoch");
  app.add_option("--resume", resume, "continue from this checkpoint");
  app.add_option("--metrics", metrics, "metrics log (.csv or .jsonl)");
  app.add_option("--plot", plot, "training curves (.svg or .png)");
  app.add_option("--workers", workers, "data loader worker threads");
  app.add_option("--limit-train", limit_train, "use only the first N training images (0: all)");
  app.add_option("--limit-test", limit_test, "evaluate on only the first N test images (0: all)");
  app.add_option("--data-dir", data_dir);
  app.add_option("--seed", seed);
  app.add_option("--comm-hook", comm_hook, "DDP gradient compression: none, fp16, bf16 or powersgd")
      ->check(CLI::IsMember({"none", "fp16", "bf16", "powersgd"}));
  app.add_option("--powersgd-rank", powersgd.matrix_approximation_rank, "PowerSGD approximation rank");
  app.add_option("--powersgd-start", powersgd.start_powerSGD_iter, "plain all-reduce steps before PowerSGD starts");
  CLI11_PARSE(app, argc, argv);

  try {
    // Data-parallel when a launcher started several ranks.
    std::shared_ptr<distributed::ProcessGroup> group;
    if (env_int("WORLD_SIZE", 1) > 1) {
      distributed::init_process_group();
      group = distributed::default_group_ptr();
    }
    const int rank = group ? group->rank() : 0, world = group ? group->size() : 1;
    if (group)
      ANVIL_CHECK(batch_size % world == 0, "fashion_mnist: --batch-size ", batch_size,
                  " must be divisible by the number of ranks ", world);
    const int64_t rank_batch = batch_size / world;

    manual_seed(seed);
    auto train_set = data::idx_image_dataset(data_dir, "train");
    auto test_set = data::idx_image_dataset(data_dir, "test");
    auto keep_first = [](std::shared_ptr<data::TensorDataset>& set, int64_t limit) {
      if (limit > 0 && limit < set->size())
        set =
            std::make_shared<data::TensorDataset>(set->data().narrow(0, 0, limit), set->targets().narrow(0, 0, limit));
    };
    keep_first(train_set, limit_train);
    keep_first(test_set, limit_test);
    // Fashion-MNIST's pixel mean and standard deviation.
    auto normalize = data::transforms::normalize({0.2860}, {0.3530});
    std::shared_ptr<data::DistributedSampler> sampler;
    if (group)
      sampler = std::make_shared<data::DistributedSampler>(
          train_set->size(), data::DistributedSamplerOptions{
                                 .rank = rank, .world_size = world, .shuffle = true, .seed = seed, .drop_last = true});
    data::DataLoader train_loader(train_set,
                                  {.batch_size = rank_batch,
                                   .shuffle = !group,
                                   .seed = seed,
                                   .drop_last = true,
                                   .num_workers = static_cast<int>(workers),
                                   .transform = normalize},
                                  sampler);
    data::DataLoader test_loader(test_set,
                                 {.batch_size = 500, .num_workers = static_cast<int>(workers), .transform = normalize});

    std::shared_ptr<nn::Module> model = model_name == "cnn" ? samples::make_cnn() : samples::make_mlp();
    std::shared_ptr<distributed::DistributedDataParallel> ddp_model;
    Device device = device_name.empty() ? train::best_device() : Device(device_name);
    if (group && device.type == DeviceType::CUDA) device = Device::cuda(env_int("LOCAL_RANK", 0));
    if (group) {
      // DDP's buckets live on the parameters' device: place the model first.
      model->to(device);
      auto ddp = std::make_shared<distributed::DistributedDataParallel>(model, group);
      register_comm_hook(*ddp, comm_hook, powersgd);
      ddp_model = ddp;
      model = ddp;
    }
    train::ClassificationTask task(model);
    optim::AdamW optimizer(model->parameters(), {.lr = lr, .weight_decay = 1e-4});
    int64_t steps = epochs * train_loader.num_batches();
    optim::CosineAnnealingLR schedule(optimizer,
                                      {.total_steps = steps, .warmup_steps = std::min<int64_t>(200, steps / 10)});

    // Files and output come from rank 0 only; each rank draws its own dropout masks.
    const bool lead = rank == 0;
    train::TrainerOptions options{.max_epochs = epochs,
                                  .device = device,
                                  .precision = parse_precision(amp),
                                  .checkpoint_path = lead ? checkpoint : "",
                                  .resume_from = resume,
                                  .metrics_path = lead ? metrics : "",
                                  .plot_path = lead ? plot : "",
                                  .seed = seed + static_cast<uint64_t>(rank)};
    if (!lead) options.progress = train::ProgressMode::Off;
    train::Trainer trainer(options);
    auto start = std::chrono::steady_clock::now();
    train::FitResult fit = trainer.fit(task, train_loader, &test_loader, optimizer, &schedule);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    train::Metrics result = trainer.test(task, test_loader);

    // Samples trained in this run by all ranks (a resumed run skips the epochs already done).
    int64_t trained = static_cast<int64_t>(fit.step_losses.size()) * batch_size;
    auto peak = memory_stats(trainer.device()).peak_allocated_bytes;
    const int64_t bytes_per_step = ddp_model ? ddp_model->comm_stats().last_step_bytes : 0;
    ddp_model.reset();
    if (group) {
      group->barrier()->wait();  // no rank exits while another still needs it
      group.reset();
      distributed::destroy_process_group();
    }
    if (!lead) return 0;
    std::printf(
        "{\"sample\": \"fashion_mnist\", \"model\": \"%s\", \"device\": \"%s\", \"epochs\": %lld, "
        "\"amp\": \"%s\", \"ranks\": %d, \"test_accuracy\": %.4f, \"test_loss\": %.4f, "
        "\"samples_per_sec\": %.1f, \"peak_memory_bytes\": %lld, \"comm_hook\": \"%s\", "
        "\"comm_bytes_per_step\": %lld}\n",
        model_name.c_str(), trainer.device().str().c_str(), static_cast<long long>(fit.epochs_completed), amp.c_str(),
        world, result["test_accuracy"], result["test_loss"], trained / seconds, static_cast<long long>(peak),
        world > 1 ? comm_hook.c_str() : "none", static_cast<long long>(bytes_per_step));
    return 0;
  } catch (const Error& e) {
    std::cerr << "fashion_mnist: " << e.what() << "\n";
    return 1;
  }
}
