// A small GPT trained on bytes of text (default: Debian's fortunes corpus):
// token + position embeddings, pre-LN transformer blocks, a linear head.
// Prints the validation loss and a generated sample; the last line is JSON.
//
//   build/bin/char_gpt --epochs 2 --steps 200
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <anvil/anvil.h>

#include "samples/models.h"

using namespace anvil;
using namespace anvil::nn;
using anvil::samples::Gpt;
using anvil::samples::GptOptions;
using anvil::samples::read_corpus;

namespace {

// Next-token prediction: cross-entropy over every position.
class LanguageModelTask : public train::Task {
 public:
  explicit LanguageModelTask(std::shared_ptr<Gpt> gpt) : gpt_(std::move(gpt)) {}
  std::shared_ptr<Module> model() override { return gpt_; }
  train::StepOutput training_step(const data::Example& b) override { return {loss(b)}; }
  train::Metrics validation_step(const data::Example& b) override { return {{"loss", loss(b).item<double>()}}; }

 private:
  Tensor loss(const data::Example& b) { return samples::language_model_loss(gpt_->forward(b.data), b.target); }
  std::shared_ptr<Gpt> gpt_;
};

// Each epoch visits `count` random windows starting in [first, last) (the
// corpus has millions).
class RandomWindows : public data::Sampler {
 public:
  RandomWindows(int64_t first, int64_t last, int64_t count, uint64_t seed)
      : first_(first), last_(last), count_(count), seed_(seed) {}
  std::vector<int64_t> indices(int64_t epoch) const override {
    auto perm = data::random_permutation(last_ - first_, seed_, static_cast<uint64_t>(epoch));
    perm.resize(static_cast<size_t>(std::min(count_, last_ - first_)));
    for (auto& i : perm) i += first_;
    return perm;
  }

 private:
  int64_t first_, last_, count_;
  uint64_t seed_;
};

// Samples `n` bytes after `prompt`, at temperature 1, from the model's softmax.
std::string generate(Gpt& gpt, const data::CharDataset& ds, const std::string& prompt, int64_t n, Device device) {
  NoGradGuard no_grad;
  gpt.eval();
  std::vector<int64_t> ids = ds.encode(prompt);
  for (int64_t i = 0; i < n; ++i) {
    int64_t start = std::max<int64_t>(0, static_cast<int64_t>(ids.size()) - gpt.options().block);
    std::vector<int64_t> context(ids.begin() + start, ids.end());
    Tensor logits = gpt.forward(from_vector(context, {1, static_cast<int64_t>(context.size())}).to(device));
    auto probs = softmax(logits.select(1, -1).squeeze(0).to(kFloat32), -1).to_vector<float>();
    float u = rand({1}).item<float>(), acc = 0;
    int64_t next = static_cast<int64_t>(probs.size()) - 1;
    for (size_t k = 0; k < probs.size(); ++k)
      if ((acc += probs[k]) > u) { next = static_cast<int64_t>(k); break; }
    ids.push_back(next);
  }
  return ds.decode(ids);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A small character-level GPT trained with anvil"};
  std::string text_path = samples::kFortunesDir, device_name, amp = "none", checkpoint, resume;
  int64_t epochs = 2, steps = 200, batch_size = 32, workers = 1;
  GptOptions g;
  double lr = 1e-3;
  uint64_t seed = 0;
  app.add_option("--text", text_path, "a text file, or a folder of text files");
  app.add_option("--device", device_name, "cpu, cuda or cuda:N (default: the best present)");
  app.add_option("--epochs", epochs);
  app.add_option("--steps", steps, "optimizer steps per epoch");
  app.add_option("--batch-size", batch_size);
  app.add_option("--block", g.block, "context length in bytes");
  app.add_option("--layers", g.n_layer);
  app.add_option("--embd", g.n_embd);
  app.add_option("--heads", g.n_head);
  app.add_option("--lr", lr);
  app.add_option("--amp", amp, "mixed precision: none, bf16 or fp16");
  app.add_option("--checkpoint", checkpoint);
  app.add_option("--resume", resume);
  app.add_option("--workers", workers);
  app.add_option("--seed", seed);
  CLI11_PARSE(app, argc, argv);

  try {
    manual_seed(seed);
    std::string text = read_corpus(text_path);
    auto corpus = std::make_shared<data::CharDataset>(text, g.block);
    g.vocab = corpus->vocab_size();
    // Windows starting in the last 10% of the corpus are held out for validation.
    int64_t cut = corpus->size() * 9 / 10;
    data::DataLoader train_loader(corpus, {.batch_size = batch_size, .drop_last = true,
                                           .num_workers = static_cast<int>(workers)},
                                  std::make_shared<RandomWindows>(0, cut - g.block, steps * batch_size, seed));
    data::DataLoader val_loader(corpus, {.batch_size = batch_size, .drop_last = true},
                                std::make_shared<RandomWindows>(cut, corpus->size(), 20 * batch_size, seed + 1));

    auto gpt = std::make_shared<Gpt>(g);
    LanguageModelTask task(gpt);
    optim::AdamW optimizer(gpt->parameters(), {.lr = lr, .weight_decay = 0.1});
    optim::CosineAnnealingLR schedule(optimizer, {.total_steps = epochs * steps, .warmup_steps = steps / 5,
                                                  .min_lr = lr / 10});
    train::TrainerOptions options{.max_epochs = epochs, .clip_grad_norm = 1.0,
                                  .checkpoint_path = checkpoint, .resume_from = resume, .seed = seed};
    if (amp == "bf16") options.precision = train::Precision::BF16;
    else if (amp == "fp16") options.precision = train::Precision::FP16;
    else ANVIL_CHECK(amp == "none" || amp == "fp32", "char_gpt: --amp must be none, bf16 or fp16");
    if (!device_name.empty()) options.device = Device(device_name);
    train::Trainer trainer(options);

    auto start = std::chrono::steady_clock::now();
    train::FitResult fit = trainer.fit(task, train_loader, &val_loader, optimizer, &schedule);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double val_loss = trainer.validate(task, val_loader)["val_loss"];
    std::string sample = generate(*gpt, *corpus, "Q: ", 200, trainer.device());
    std::printf("validation loss %.4f (uniform guess: %.4f)\n--- sample ---\n%s\n--------------\n", val_loss,
                std::log(static_cast<double>(g.vocab)), sample.c_str());
    double tokens = static_cast<double>(fit.step_losses.size()) * batch_size * g.block;
    std::printf("{\"sample\": \"char_gpt\", \"model\": \"gpt-%lldx%lld\", \"device\": \"%s\", \"epochs\": %lld, "
                "\"val_loss\": %.4f, \"tokens_per_sec\": %.1f, \"peak_memory_bytes\": %lld}\n",
                static_cast<long long>(g.n_layer), static_cast<long long>(g.n_embd),
                trainer.device().str().c_str(), static_cast<long long>(fit.epochs_completed), val_loss,
                tokens / seconds, static_cast<long long>(memory_stats(trainer.device()).peak_allocated_bytes));
    return 0;
  } catch (const Error& e) {
    std::cerr << "char_gpt: " << e.what() << "\n";
    return 1;
  }
}
