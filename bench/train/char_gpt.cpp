// Training throughput of the char_gpt sample's GPT (samples/models.h) on the
// CPU, or the GPU that ANVIL_BENCH_DEVICE names (train_bench.h), with the
// sample's defaults: block 64, 4 layers, 128-wide embeddings, 4 heads,
// dropout 0.1, batch 32, on random windows of Debian's fortunes (vocabulary:
// its 114 distinct bytes); AdamW (lr 1e-3, weight decay 0.1) with gradients
// clipped to norm 1, as the sample trains it. Reports tokens per second and
// the seconds one of the sample's epochs (200 steps) would take.
#include <memory>
#include <vector>

#include "bench/train/train_bench.h"
#include "samples/models.h"

namespace anvil::bench {
namespace {

using nn::data::Example;

constexpr int64_t kBatchSize = 32;
constexpr int64_t kStepsPerIteration = 20;
constexpr int64_t kStepsPerEpoch = 200;  // char_gpt's --steps default

struct Corpus {
  std::shared_ptr<nn::data::CharDataset> dataset;
  std::vector<Example> batches;  // kStepsPerIteration batches of random windows
};

const Corpus& corpus() {
  static const Corpus c = [] {
    Corpus out;
    out.dataset = std::make_shared<nn::data::CharDataset>(samples::read_corpus(samples::kFortunesDir),
                                                          samples::GptOptions{}.block);
    // Random windows from the first 90% of the text, as the sample's training split.
    int64_t windows = out.dataset->size() * 9 / 10 - out.dataset->block_size();
    std::vector<int64_t> starts = nn::data::random_permutation(windows, /*seed=*/0, /*stream=*/0);
    for (int64_t step = 0; step < kStepsPerIteration; ++step) {
      std::vector<int64_t> batch(starts.begin() + step * kBatchSize, starts.begin() + (step + 1) * kBatchSize);
      out.batches.push_back(out.dataset->get_batch(batch));
    }
    return out;
  }();
  return c;
}

Tensor train_step(samples::Gpt& gpt, nn::optim::Optimizer& optimizer, const Example& batch) {
  Tensor loss = samples::language_model_loss(gpt.forward(batch.data), batch.target);
  loss.backward();
  nn::optim::clip_grad_norm_(optimizer.parameters(), 1.0);
  optimizer.step();
  optimizer.zero_grad();
  return loss;
}

void BM_train_char_gpt(benchmark::State& state) {
  const std::optional<Device> device = bench_device(state);
  if (!device) return;
  const Corpus* data = nullptr;
  std::vector<Example> batches;
  try {
    data = &corpus();
    for (const Example& b : data->batches) batches.push_back({b.data.to(*device), b.target.to(*device)});
  } catch (const Error& e) {
    state.SkipWithError(e.what());  // no fortunes corpus: report it rather than abort the binary
    return;
  }
  manual_seed(0);
  samples::GptOptions options;
  options.vocab = data->dataset->vocab_size();
  auto gpt = std::make_shared<samples::Gpt>(options);
  gpt->to(*device);
  gpt->train();
  nn::optim::AdamW optimizer(gpt->parameters(), {.lr = 1e-3, .weight_decay = 0.1});
  for (int64_t i = 0; i < kWarmupSteps; ++i) train_step(*gpt, optimizer, batches[i]);

  GpuUtilization gpu(*device);
  for (auto _ : state) {
    Tensor loss;
    for (const Example& batch : batches) loss = train_step(*gpt, optimizer, batch);
    benchmark::DoNotOptimize(loss.item<double>());  // waits for the step, as logging the loss would
  }
  gpu.report(state);
  const auto steps = static_cast<int64_t>(batches.size());
  set_items_per_iteration(state, "tokens_per_second", static_cast<double>(steps * kBatchSize * options.block));
  set_epoch_seconds(state, steps, kStepsPerEpoch);
  set_step_seconds(state, steps);
}

BENCHMARK(BM_train_char_gpt)->Apply(training_run);

}  // namespace
}  // namespace anvil::bench
