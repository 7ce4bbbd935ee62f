// Training throughput of the Fashion-MNIST sample's MLP and CNN
// (samples/models.h) as the sample trains them, on the CPU or the GPU that
// ANVIL_BENCH_DEVICE names (train_bench.h): real,
// normalised training batches of 64, ClassificationTask's loss, AdamW
// (lr 1e-3, weight decay 1e-4), dropout on. Reports samples per second and
// the seconds one epoch (937 steps, 60000 images, last partial batch dropped)
// would take. The sample's LR schedule is left out: it only sets a number.
#include <memory>
#include <vector>

#include "bench/train/train_bench.h"
#include "samples/models.h"

namespace anvil::bench {
namespace {

using nn::data::Example;

constexpr int64_t kBatchSize = 64;
constexpr int64_t kStepsPerIteration = 50;
constexpr int64_t kStepsPerEpoch = 60000 / kBatchSize;  // 937

// The first batches of the sample's epoch 0 (shuffled with seed 0,
// normalised with Fashion-MNIST's mean and standard deviation), loaded once
// for both models.
const std::vector<Example>& training_batches() {
  static const std::vector<Example> batches = [] {
    auto train_set = nn::data::idx_image_dataset(nn::data::kFashionMnistDir, "train");
    nn::data::DataLoader loader(train_set, {.batch_size = kBatchSize,
                                            .shuffle = true,
                                            .seed = 0,
                                            .drop_last = true,
                                            .transform = nn::data::transforms::normalize({0.2860}, {0.3530})});
    std::vector<Example> out;
    for (const Example& batch : loader) {
      out.push_back(batch);
      if (static_cast<int64_t>(out.size()) == kStepsPerIteration) break;
    }
    return out;
  }();
  return batches;
}

// One optimizer step as the Trainer takes it; returns the loss.
Tensor train_step(nn::train::Task& task, nn::optim::Optimizer& optimizer, const Example& batch) {
  Tensor loss = task.training_step(batch).loss;
  loss.backward();
  optimizer.step();
  optimizer.zero_grad();
  return loss;
}

void train_classifier(benchmark::State& state, std::shared_ptr<nn::Module> (*make_model)()) {
  const std::optional<Device> device = bench_device(state);
  if (!device) return;
  std::vector<Example> on_device;
  try {
    // Uploaded before timing: the benchmark is the training step, not the copy.
    for (const Example& b : training_batches()) on_device.push_back({b.data.to(*device), b.target.to(*device)});
  } catch (const Error& e) {
    state.SkipWithError(e.what());  // the dataset is missing: report it rather than abort the binary
    return;
  }
  const std::vector<Example>* batches = &on_device;
  manual_seed(0);
  std::shared_ptr<nn::Module> model = make_model();
  model->to(*device);
  model->train();
  nn::train::ClassificationTask task(model);
  nn::optim::AdamW optimizer(model->parameters(), {.lr = 1e-3, .weight_decay = 1e-4});
  for (int64_t i = 0; i < kWarmupSteps; ++i) train_step(task, optimizer, (*batches)[i]);

  GpuUtilization gpu(*device);
  for (auto _ : state) {
    Tensor loss;
    for (const Example& batch : *batches) loss = train_step(task, optimizer, batch);
    // Reading the loss waits for the step, as logging it would.
    benchmark::DoNotOptimize(loss.item<double>());
  }
  gpu.report(state);
  const auto steps = static_cast<int64_t>(batches->size());
  set_items_per_iteration(state, "samples_per_second", static_cast<double>(steps * kBatchSize));
  set_epoch_seconds(state, steps, kStepsPerEpoch);
  set_step_seconds(state, steps);
}

void BM_train_fashion_mnist_mlp(benchmark::State& state) { train_classifier(state, &samples::make_mlp); }
void BM_train_fashion_mnist_cnn(benchmark::State& state) { train_classifier(state, &samples::make_cnn); }

// The MLP's 50 steps take a fraction of a second: more iterations for a stable number.
BENCHMARK(BM_train_fashion_mnist_mlp)->Apply(training_run)->Iterations(20);
BENCHMARK(BM_train_fashion_mnist_cnn)->Apply(training_run);

}  // namespace
}  // namespace anvil::bench
