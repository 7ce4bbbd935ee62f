// A small GPT trained on bytes of text (default: Debian's fortunes corpus):
// token + position embeddings, pre-LN transformer blocks, a linear head.
// Prints the validation loss and a generated sample; the last line is JSON.
//
//   build/bin/char_gpt --epochs 2 --steps 200
//
// Pipeline parallel: under the launcher, --pipeline-stages N splits the GPT
// into N stages, one per rank (embeddings on the first, the blocks divided,
// final LayerNorm + head + loss on the last), trained with a GPipe or 1F1B
// schedule over micro-batches. Only the last stage prints.
//
//   build/bin/anvil-run --nproc-per-node 2 build/bin/char_gpt --pipeline-stages 2 --schedule 1f1b --micro-batches 4
//
// Tensor parallel (Megatron-LM): --tensor-parallel N splits every layer over
// N ranks (samples/tensor_parallel_gpt.h); --data-parallel M runs M such
// groups on M shards of each batch, N * M ranks as a 2-D mesh ("dp", "tp").
// --sequence-parallel splits LayerNorms and residuals along the sequence;
// --pipeline-stages P adds a third dimension (P x M x N ranks, mesh "pp",
// "dp", "tp"): each stage's layers split over its tensor-parallel group.
// Dropout is off under tensor parallelism (--dropout 0 gives the single-process
// run to compare with), and the vocabulary is padded to a multiple of N.
//
//   build/bin/anvil-run --nproc-per-node 4 build/bin/char_gpt --tensor-parallel 2 --data-parallel 2
//   build/bin/anvil-run --nproc-per-node 8 build/bin/char_gpt --tensor-parallel 2 --data-parallel 2 --pipeline-stages 2
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include <anvil/anvil.h>

#include "distributed/distributed.h"
#include "distributed/model_parallel/model_parallel.h"
#include "distributed/pipeline/executor.h"
#include "samples/models.h"
#include "samples/tensor_parallel_gpt.h"

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
      if ((acc += probs[k]) > u) {
        next = static_cast<int64_t>(k);
        break;
      }
    ids.push_back(next);
  }
  return ds.decode(ids);
}

// The GPT's token + position embeddings as one module (the pipeline's first
// layer); it holds the Gpt's own Embedding modules.
class GptEmbedding : public Module {
 public:
  GptEmbedding(std::shared_ptr<Embedding> tok, std::shared_ptr<Embedding> pos) : Module("GptEmbedding") {
    tok_ = register_module("tok", std::move(tok));
    pos_ = register_module("pos", std::move(pos));
  }
  Tensor forward(const Tensor& tokens) override {
    Tensor positions = arange(tokens.size(1), TensorOptions(kInt64).device(tokens.device()));
    return tok_->forward(tokens) + pos_->forward(positions);
  }

 private:
  std::shared_ptr<Embedding> tok_, pos_;
};

// Gpt::forward as a Sequential of the same modules: [embedding, block 0 ..
// block L-1, final LayerNorm, head], so it can be cut into stages.
std::shared_ptr<Sequential> gpt_as_sequential(Gpt& gpt) {
  auto seq = std::make_shared<Sequential>();
  seq->push_back(std::make_shared<GptEmbedding>(gpt.tok, gpt.pos));
  for (auto& block : gpt.blocks->children()) seq->push_back(block);
  seq->push_back(gpt.ln);
  seq->push_back(gpt.head);
  return seq;
}

struct PipelineSettings {
  int stages = 0;
  std::string schedule = "1f1b";
  int micro_batches = 4;
  std::string trace;  // Chrome trace of the last step, written by rank 0
};

// One rank of a pipeline-parallel run (started by anvil-run with as many
// ranks as stages). Every rank builds the whole GPT from the same seed and
// keeps its stage; every rank reads the same batches (same sampler seed):
// stage 0 uses the tokens, the last stage the targets.
int train_pipeline(const PipelineSettings& pp, GptOptions g, const std::string& text_path,
                   const std::string& device_name, int64_t epochs, int64_t steps, int64_t batch_size, double lr,
                   uint64_t seed) {
  namespace dist = anvil::distributed;
  namespace pipe = anvil::distributed::pipeline;
  // CUDA stages exchange over NCCL, which wants a GPU per rank: stages that
  // share a GPU (more ranks here than GPUs) go through the host over Gloo.
  const bool sharing_gpus =
      cuda::is_available() && dist::launch_env_from_environment().local_world_size > cuda::device_count();
  dist::init_process_group({.backend = sharing_gpus ? "gloo" : "auto"});
  auto group = dist::default_group_ptr();
  const int rank = group->rank();
  ANVIL_CHECK(group->size() == pp.stages, "char_gpt: --pipeline-stages ", pp.stages, " needs as many ranks; ",
              "the launcher started ", group->size(), " (anvil-run --nproc-per-node ", pp.stages, ")");
  Device device = !device_name.empty()   ? Device(device_name)
                  : cuda::is_available() ? Device::cuda(dist::get_local_rank() % cuda::device_count())
                                         : Device::cpu();

  manual_seed(seed);
  std::string text = read_corpus(text_path);
  auto corpus = std::make_shared<data::CharDataset>(text, g.block);
  g.vocab = corpus->vocab_size();
  int64_t cut = corpus->size() * 9 / 10;
  data::DataLoader train_loader(corpus, {.batch_size = batch_size, .drop_last = true},
                                std::make_shared<RandomWindows>(0, cut - g.block, steps * batch_size, seed));
  data::DataLoader val_loader(corpus, {.batch_size = batch_size, .drop_last = true},
                              std::make_shared<RandomWindows>(cut, corpus->size(), 20 * batch_size, seed + 1));

  auto gpt = std::make_shared<Gpt>(g);
  auto seq = gpt_as_sequential(*gpt);
  // Embedding with stage 0, LayerNorm + head with the last stage, the blocks
  // divided as evenly as they go.
  ANVIL_CHECK(g.n_layer >= pp.stages - 1, "char_gpt: ", g.n_layer, " layers cannot fill ", pp.stages, " stages");
  dist::Boundaries cuts;
  for (int s = 1; s < pp.stages; ++s) cuts.push_back(static_cast<size_t>(1 + s * g.n_layer / pp.stages));
  auto stage = dist::stage_of_sequential(*seq, rank, pp.stages, cuts);
  stage->to(device);
  pipe::PipelineExecutor executor(stage, group, samples::language_model_loss,
                                  {.schedule = pipe::schedule_kind_from_string(pp.schedule),
                                   .micro_batches = pp.micro_batches,
                                   .device = device,
                                   .record_timeline = !pp.trace.empty()});
  optim::AdamW optimizer(stage->parameters(), {.lr = lr, .weight_decay = 0.1});
  optim::CosineAnnealingLR schedule(optimizer,
                                    {.total_steps = epochs * steps, .warmup_steps = steps / 5, .min_lr = lr / 10});
  auto params = stage->parameters();

  auto start = std::chrono::steady_clock::now();
  int64_t step_count = 0;
  double bubble_sum = 0, theoretical = 0, last_loss = 0;
  int max_live = 0;
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    stage->train();
    for (const data::Example& b : train_loader) {
      stage->zero_grad();
      pipe::PipelineStepResult r = executor.train_step(b.data, b.target);
      // Clip by the norm of the whole model's gradient: every stage adds its
      // squares, then all scale by the same factor.
      Tensor sq = zeros({1}, kFloat64);
      for (const Tensor& p : params)
        if (p.grad().defined()) sq += p.grad().to(kFloat64).square().sum().cpu().reshape({1});
      group->all_reduce(sq)->wait();
      double norm = std::sqrt(sq.item<double>());
      if (norm > 1.0)
        for (const Tensor& p : params)
          if (p.grad().defined()) {
            Tensor grad = p.grad();
            grad.mul_(1.0 / (norm + 1e-6));
          }
      optimizer.step();
      schedule.step();
      ++step_count;
      if (step_count > 1) bubble_sum += r.bubble_fraction;  // the first step also pays for connecting
      theoretical = r.theoretical_bubble_fraction;
      max_live = std::max(max_live, r.max_live_activations);
      if (executor.is_last()) last_loss = r.loss;
      if (executor.is_last() && step_count % 50 == 0)
        std::printf("step %lld loss %.4f\n", static_cast<long long>(step_count), last_loss);
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!pp.trace.empty()) executor.write_chrome_trace(pp.trace);

  stage->eval();
  val_loader.set_epoch(0);
  double val_sum = 0;
  int64_t val_batches = 0;
  for (const data::Example& b : val_loader) {
    val_sum += executor.evaluate(b.data, b.target);
    ++val_batches;
  }
  // The measured bubble averaged over the stages (each measures its own waits).
  Tensor bubble = full({1}, step_count > 1 ? bubble_sum / static_cast<double>(step_count - 1) : 0.0, kFloat64);
  group->all_reduce(bubble)->wait();
  double measured = bubble.item<double>() / pp.stages;
  Tensor live = full({1}, static_cast<int64_t>(max_live), kInt64);  // stage 0 holds the most
  group->all_reduce(live, dist::ReduceOp::Max)->wait();
  if (executor.is_last()) {
    double val_loss = val_sum / static_cast<double>(std::max<int64_t>(val_batches, 1));
    double tokens = static_cast<double>(step_count) * batch_size * g.block;
    std::printf("%s", executor.schedule().str().c_str());
    std::printf(
        "validation loss %.4f (uniform guess: %.4f); bubble measured %.3f, theoretical (p-1)/(m+p-1) %.3f; "
        "at most %lld micro-batches' activations alive on a stage\n",
        val_loss, std::log(static_cast<double>(g.vocab)), measured, theoretical,
        static_cast<long long>(live.item<int64_t>()));
    std::printf(
        "{\"sample\": \"char_gpt\", \"model\": \"gpt-%lldx%lld\", \"device\": \"%s\", \"epochs\": %lld, "
        "\"pipeline_stages\": %d, \"schedule\": \"%s\", \"micro_batches\": %d, \"val_loss\": %.4f, "
        "\"train_loss\": %.4f, \"bubble_fraction\": %.4f, \"theoretical_bubble_fraction\": %.4f, "
        "\"tokens_per_sec\": %.1f}\n",
        static_cast<long long>(g.n_layer), static_cast<long long>(g.n_embd), device.str().c_str(),
        static_cast<long long>(epochs), pp.stages, pp.schedule.c_str(), pp.micro_batches, val_loss, last_loss, measured,
        theoretical, tokens / seconds);
    std::fflush(stdout);
  }
  dist::destroy_process_group();
  return 0;
}

struct TensorParallelSettings {
  int tp = 0, dp = 1;
  bool sequence_parallel = false;
};

// One rank of a tensor (x data (x pipeline)) parallel run on a mesh
// ("pp", "dp", "tp"). Every rank builds the whole GPT from the same seed and
// keeps its slices (of its stage's layers), and reads the same batches (same
// sampler seed); data-parallel row d trains on rows [d B/dp, (d+1) B/dp).
int train_tensor_parallel(const TensorParallelSettings& ts, const PipelineSettings& pp, GptOptions g,
                          const std::string& text_path, const std::string& device_name, int64_t epochs, int64_t steps,
                          int64_t batch_size, double lr, uint64_t seed) {
  namespace dist = anvil::distributed;
  dist::init_process_group();
  const int world = dist::get_world_size(), stages = std::max(pp.stages, 1), ranks = ts.tp * ts.dp * stages;
  ANVIL_CHECK(world == ranks, "char_gpt: --tensor-parallel ", ts.tp, " x --data-parallel ", ts.dp,
              " x --pipeline-stages ", stages, " needs ", ranks, " ranks; the launcher started ", world,
              " (anvil-run --nproc-per-node ", ranks, ")");
  ANVIL_CHECK(batch_size % ts.dp == 0, "char_gpt: --batch-size ", batch_size, " does not divide by --data-parallel ",
              ts.dp);
  Device device = !device_name.empty()   ? Device(device_name)
                  : cuda::is_available() ? Device::cuda(dist::get_local_rank() % cuda::device_count())
                                         : Device::cpu();
  auto mesh = dist::init_device_mesh(device.is_cuda() ? "cuda" : "cpu", {stages, ts.dp, ts.tp}, {"pp", "dp", "tp"});
  auto tp = mesh.get_group("tp");
  auto dp = mesh.get_group("dp");
  auto pp_group = mesh.get_group("pp");
  const bool last_stage = mesh.get_local_rank("pp") == stages - 1;
  // Prints: the first rank of the last stage, which has the loss.
  const bool printer = last_stage && mesh.get_local_rank("dp") == 0 && mesh.get_local_rank("tp") == 0;

  manual_seed(seed);
  std::string text = read_corpus(text_path);
  auto corpus = std::make_shared<data::CharDataset>(text, g.block);
  // Padded rows are never targets; the single-process run with the same
  // padding (and --dropout 0) is the one to compare with.
  g.vocab = (corpus->vocab_size() + ts.tp - 1) / ts.tp * ts.tp;
  if (g.dropout != 0.0 && printer) {
    std::printf("char_gpt: dropout %.2f is off under tensor parallelism\n", g.dropout);
    std::fflush(stdout);  // before the other lines, which the launcher relays as they come
  }
  g.dropout = 0.0;
  int64_t cut = corpus->size() * 9 / 10;
  data::DataLoader train_loader(corpus, {.batch_size = batch_size, .drop_last = true},
                                std::make_shared<RandomWindows>(0, cut - g.block, steps * batch_size, seed));
  data::DataLoader val_loader(corpus, {.batch_size = batch_size, .drop_last = true},
                              std::make_shared<RandomWindows>(cut, corpus->size(), 20 * batch_size, seed + 1));

  auto whole = std::make_shared<Gpt>(g);
  whole->to(device);
  samples::TensorParallelGpt gpt(*whole, tp, {.sequence_parallel = ts.sequence_parallel});
  whole.reset();  // this rank keeps its slices only
  // The stage's layers: embeddings with stage 0, LayerNorm + head with the
  // last, the blocks divided as evenly as they go (all of them for one stage).
  ANVIL_CHECK(g.n_layer >= stages - 1, "char_gpt: ", g.n_layer, " layers cannot fill ", stages, " stages");
  dist::Boundaries cuts;
  for (int s = 1; s < stages; ++s) cuts.push_back(static_cast<size_t>(1 + s * g.n_layer / stages));
  auto stage = dist::stage_of_sequential(*gpt.as_sequential(), mesh.get_local_rank("pp"), stages, cuts);
  namespace pipe = anvil::distributed::pipeline;
  pipe::PipelineExecutor executor(
      stage, pp_group, [&](const Tensor& logits, const Tensor& targets) { return gpt.loss_of_logits(logits, targets); },
      {.schedule = pipe::schedule_kind_from_string(pp.schedule),
       .micro_batches = stages > 1 ? pp.micro_batches : 1,
       .device = device});
  const std::vector<Tensor> params = stage->parameters();
  optim::AdamW optimizer(params, {.lr = lr, .weight_decay = 0.1});
  optim::CosineAnnealingLR schedule(optimizer,
                                    {.total_steps = epochs * steps, .warmup_steps = steps / 5, .min_lr = lr / 10});
  const int64_t rows = batch_size / ts.dp, first_row = mesh.get_local_rank("dp") * rows;
  auto my_rows = [&](const Tensor& t) { return t.narrow(0, first_row, rows).to(device); };
  // The loss of the whole batch: the mean of the data-parallel rows' means.
  auto batch_mean = [&](double loss) {
    Tensor l = full({1}, loss, kFloat64);
    dp->all_reduce(l, dist::ReduceOp::Avg)->wait();
    return l.item<double>();
  };

  auto start = std::chrono::steady_clock::now();
  int64_t step_count = 0;
  double last_loss = 0;
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    stage->train();
    for (const data::Example& b : train_loader) {
      stage->zero_grad();
      pipe::PipelineStepResult r = executor.train_step(my_rows(b.data), my_rows(b.target));
      gpt.finish_gradients();
      if (ts.dp > 1)
        for (const Tensor& p : params) {
          Tensor grad = p.grad();
          if (grad.defined()) dp->all_reduce(grad, dist::ReduceOp::Avg)->wait();
        }
      // Clip by the whole model's gradient norm, as the single-process Trainer
      // does: squares summed over the tp slices, then over the stages.
      Tensor sq = full({1}, gpt.grad_norm_squared(params), kFloat64);
      pp_group->all_reduce(sq)->wait();
      const double norm = std::sqrt(sq.item<double>());
      if (norm > 1.0)
        for (const Tensor& p : params)
          if (p.grad().defined()) {
            Tensor grad = p.grad();
            grad.mul_(1.0 / (norm + 1e-6));
          }
      optimizer.step();
      schedule.step();
      ++step_count;
      last_loss = batch_mean(last_stage ? r.loss : 0.0);
      if (printer && step_count % 50 == 0)
        std::printf("step %lld loss %.4f\n", static_cast<long long>(step_count), last_loss);
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  stage->eval();
  NoGradGuard no_grad;
  // The windows the single-process run's last validation sees (its Trainer
  // validated once per epoch before, each pass advancing the loader's epoch),
  // so the two validation losses compare.
  val_loader.set_epoch(epochs);
  double val_sum = 0;
  int64_t val_batches = 0;
  for (const data::Example& b : val_loader) {
    const double loss = executor.evaluate(my_rows(b.data), my_rows(b.target));
    val_sum += batch_mean(last_stage ? loss : 0.0);
    ++val_batches;
  }
  if (printer) {
    double val_loss = val_sum / static_cast<double>(std::max<int64_t>(val_batches, 1));
    double tokens = static_cast<double>(step_count) * batch_size * g.block;
    std::printf("validation loss %.4f (uniform guess: %.4f)\n", val_loss, std::log(static_cast<double>(g.vocab)));
    std::printf(
        "{\"sample\": \"char_gpt\", \"model\": \"gpt-%lldx%lld\", \"device\": \"%s\", \"epochs\": %lld, "
        "\"tensor_parallel\": %d, \"data_parallel\": %d, \"pipeline_stages\": %d, \"sequence_parallel\": %s, "
        "\"val_loss\": %.4f, "
        "\"train_loss\": %.4f, \"tokens_per_sec\": %.1f}\n",
        static_cast<long long>(g.n_layer), static_cast<long long>(g.n_embd), device.str().c_str(),
        static_cast<long long>(epochs), ts.tp, ts.dp, stages, ts.sequence_parallel ? "true" : "false", val_loss,
        last_loss, tokens / seconds);
    std::fflush(stdout);
  }
  dist::destroy_process_group();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"A small character-level GPT trained with anvil"};
  std::string text_path = samples::kFortunesDir, device_name, amp = "none", checkpoint, resume;
  int64_t epochs = 2, steps = 200, batch_size = 32, workers = 1, vocab_multiple = 1;
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
  PipelineSettings pp;
  app.add_option("--pipeline-stages", pp.stages, "pipeline parallel over this many ranks (start with anvil-run)");
  app.add_option("--schedule", pp.schedule, "pipeline schedule: gpipe or 1f1b");
  app.add_option("--micro-batches", pp.micro_batches, "micro-batches per batch in the pipeline");
  app.add_option("--pipeline-trace", pp.trace, "write the last step's pipeline timeline as a Chrome trace");
  TensorParallelSettings ts;
  app.add_option("--tensor-parallel", ts.tp, "split every layer over this many ranks (start with anvil-run)");
  app.add_option("--data-parallel", ts.dp, "with --tensor-parallel: this many replicas (tp x dp ranks)");
  app.add_flag("--sequence-parallel", ts.sequence_parallel,
               "with --tensor-parallel: split LayerNorms along the sequence");
  app.add_option("--dropout", g.dropout, "dropout in the transformer blocks (off under tensor parallelism)");
  app.add_option("--vocab-multiple", vocab_multiple,
                 "pad the vocabulary to a multiple of this (as --tensor-parallel does)");
  CLI11_PARSE(app, argc, argv);

  try {
    if (ts.tp > 0) return train_tensor_parallel(ts, pp, g, text_path, device_name, epochs, steps, batch_size, lr, seed);
    if (pp.stages > 0) return train_pipeline(pp, g, text_path, device_name, epochs, steps, batch_size, lr, seed);
    manual_seed(seed);
    std::string text = read_corpus(text_path);
    auto corpus = std::make_shared<data::CharDataset>(text, g.block);
    ANVIL_CHECK(vocab_multiple >= 1, "char_gpt: --vocab-multiple must be at least 1, got ", vocab_multiple);
    g.vocab = (corpus->vocab_size() + vocab_multiple - 1) / vocab_multiple * vocab_multiple;
    // Windows starting in the last 10% of the corpus are held out for validation.
    int64_t cut = corpus->size() * 9 / 10;
    data::DataLoader train_loader(
        corpus, {.batch_size = batch_size, .drop_last = true, .num_workers = static_cast<int>(workers)},
        std::make_shared<RandomWindows>(0, cut - g.block, steps * batch_size, seed));
    data::DataLoader val_loader(corpus, {.batch_size = batch_size, .drop_last = true},
                                std::make_shared<RandomWindows>(cut, corpus->size(), 20 * batch_size, seed + 1));

    auto gpt = std::make_shared<Gpt>(g);
    LanguageModelTask task(gpt);
    optim::AdamW optimizer(gpt->parameters(), {.lr = lr, .weight_decay = 0.1});
    optim::CosineAnnealingLR schedule(optimizer,
                                      {.total_steps = epochs * steps, .warmup_steps = steps / 5, .min_lr = lr / 10});
    train::TrainerOptions options{.max_epochs = epochs,
                                  .clip_grad_norm = 1.0,
                                  .checkpoint_path = checkpoint,
                                  .resume_from = resume,
                                  .seed = seed};
    if (amp == "bf16")
      options.precision = train::Precision::BF16;
    else if (amp == "fp16")
      options.precision = train::Precision::FP16;
    else
      ANVIL_CHECK(amp == "none" || amp == "fp32", "char_gpt: --amp must be none, bf16 or fp16");
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
    std::printf(
        "{\"sample\": \"char_gpt\", \"model\": \"gpt-%lldx%lld\", \"device\": \"%s\", \"epochs\": %lld, "
        "\"val_loss\": %.4f, \"train_loss\": %.4f, \"tokens_per_sec\": %.1f, \"peak_memory_bytes\": %lld}\n",
        static_cast<long long>(g.n_layer), static_cast<long long>(g.n_embd), trainer.device().str().c_str(),
        static_cast<long long>(fit.epochs_completed), val_loss, fit.step_losses.empty() ? 0.0 : fit.step_losses.back(),
        tokens / seconds, static_cast<long long>(memory_stats(trainer.device()).peak_allocated_bytes));
    return 0;
  } catch (const Error& e) {
    std::cerr << "char_gpt: " << e.what() << "\n";
    return 1;
  }
}
