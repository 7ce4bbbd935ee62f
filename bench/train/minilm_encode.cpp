// Sentence embedding throughput of all-MiniLM-L6-v2 (nn::SentenceEmbedder:
// tokenizer, BERT, mean pooling, normalisation), the work of
// semantic_search's indexing: the first 256 of Debian's fortunes, batches of
// 64 sorted by length, float32. One iteration encodes them all; the counter
// is sentences_per_second. bench/pytorch/minilm_speed.py times
// sentence-transformers on the same texts the same way, and
// bench/compare_cpu.py runs the two alternately.
//
// Not a training benchmark, but it lives with them: it runs one of the
// samples' models on ANVIL_BENCH_DEVICE like the others.
#include "bench/train/train_bench.h"
#include "samples/minilm.h"

namespace anvil::bench {
namespace {

constexpr int64_t kSentences = 256;
constexpr int64_t kBatchSize = 64;
constexpr const char* kFortunes = "/usr/share/games/fortunes";  // Debian's fortunes package

void BM_minilm_encode_fortunes(benchmark::State& state) {
  const std::optional<Device> device = bench_device(state);
  if (!device) return;
  std::vector<std::string> texts;
  std::unique_ptr<nn::SentenceEmbedder> model;
  try {
    samples::check_minilm_dir("bench_train", samples::default_minilm_dir());
    texts = samples::read_fortunes(kFortunes, kSentences);
    model = std::make_unique<nn::SentenceEmbedder>(samples::default_minilm_dir());
  } catch (const Error& e) {
    state.SkipWithError(e.what());  // no model package or no fortunes: say so rather than abort the binary
    return;
  }
  model->to(*device);
  const nn::EncodeOptions options{.batch_size = kBatchSize};
  benchmark::DoNotOptimize(model->encode(texts, options).sum().item<float>());  // warm-up: caches, allocator
  for (auto _ : state) benchmark::DoNotOptimize(model->encode(texts, options).sum().item<float>());
  set_items_per_iteration(state, "sentences_per_second", static_cast<double>(texts.size()));
}

BENCHMARK(BM_minilm_encode_fortunes)->UseRealTime()->MinTime(2.0)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace anvil::bench
