// The samples' GPT trained with tensor parallelism (samples/tensor_parallel_gpt.h)
// gives the single-process loss curve: AdamW steps on random token batches
// (one random batch, fitted step by step) with tp = 2, with tp = 2 and sequence parallelism, and with tp = 2 x dp = 2
// on a 2-D DeviceMesh (4 ranks, each data-parallel row on half the batch,
// gradients averaged over "dp"), and with pp = 2 pipeline stages x tp = 2. float32 throughout, as the sample trains.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "distributed/model_parallel/model_parallel.h"
#include "distributed/pipeline/executor.h"
#include "distributed/process_group/device_mesh.h"
#include "samples/tensor_parallel_gpt.h"
#include "tests/distributed/rank_threads.h"

namespace anvil::samples {
namespace {

using distributed::DeviceMesh;
using distributed::ProcessGroup;
using distributed::ReduceOp;
using distributed::World;
using distributed::testing::run_world_ranks;

// Here the curves agree to all 9 printed digits (the split sums happen to
// round as the full ones); the bound leaves room for another summation
// order (GEMM blocking, a backend's reduction order), which float32 and
// AdamW's early steps (update ~ lr * sign(grad)) can amplify a little.
constexpr double kLossTolerance = 1e-5;
constexpr int kSteps = 6;
const GptOptions kGpt{.vocab = 16, .block = 8, .n_embd = 16, .n_head = 4, .n_layer = 2, .dropout = 0.0};
const nn::optim::AdamWOptions kAdamW{.lr = 1e-2};

struct Batch {
  Tensor tokens, targets;  // [4, 8]
};

std::vector<Batch> random_batches() {
  // The same random batch every step, so a few steps fit it and the curve
  // goes down (fresh random batches only make a noisy flat curve).
  const Batch batch{randint(0, kGpt.vocab, {4, 8}), randint(0, kGpt.vocab, {4, 8})};
  std::vector<Batch> batches(kSteps, batch);
  return batches;
}

std::shared_ptr<Gpt> gpt_from_seed(uint64_t seed) {
  manual_seed(seed);
  return std::make_shared<Gpt>(kGpt);
}

std::vector<double> single_process_losses(const std::vector<Batch>& batches, uint64_t seed) {
  auto gpt = gpt_from_seed(seed);
  nn::optim::AdamW opt(gpt->parameters(), kAdamW);
  std::vector<double> losses;
  for (const Batch& b : batches) {
    opt.zero_grad();
    Tensor loss = language_model_loss(gpt->forward(b.tokens), b.targets);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

// One rank's curve: its tensor-parallel slice of `full`, trained on rows
// [first_row, first_row + rows) of each batch; with a dp group, gradients
// and the reported loss are averaged over it.
std::vector<double> parallel_losses(const Gpt& full, const std::vector<Batch>& batches,
                                    std::shared_ptr<ProcessGroup> tp, ProcessGroup* dp, int64_t first_row, int64_t rows,
                                    const distributed::tensor_parallel::ParallelOptions& parallel) {
  TensorParallelGpt gpt(full, std::move(tp), parallel);
  nn::optim::AdamW opt(gpt.parameters(), kAdamW);
  std::vector<double> losses;
  for (const Batch& b : batches) {
    opt.zero_grad();
    Tensor loss = gpt.loss(b.tokens.narrow(0, first_row, rows), b.targets.narrow(0, first_row, rows));
    loss.backward();
    gpt.finish_gradients();
    Tensor reported = loss.detach().clone();
    if (dp) {
      for (const Tensor& p : gpt.parameters()) {
        Tensor g = p.grad();
        dp->all_reduce(g, ReduceOp::Avg)->wait();
      }
      dp->all_reduce(reported, ReduceOp::Avg)->wait();
    }
    opt.step();
    losses.push_back(reported.item<double>());
  }
  return losses;
}

void expect_same_curve(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], kLossTolerance) << what << ", step " << i;
}

TEST(TensorParallelGptTraining, TwoRanksFollowTheSingleProcessLossCurve) {
  const std::vector<Batch> batches = random_batches();
  const std::vector<double> want = single_process_losses(batches, 11);
  ASSERT_LT(want.back(), want.front() - 0.1) << "the reference should learn something in " << kSteps << " steps";
  auto full = gpt_from_seed(11);
  for (bool sequence_parallel : {false, true}) {
    run_world_ranks(2, [&](World&, std::shared_ptr<ProcessGroup> tp) {
      expect_same_curve(parallel_losses(*full, batches, tp, nullptr, 0, 4, {.sequence_parallel = sequence_parallel}),
                        want, sequence_parallel ? "tp=2, sequence parallel" : "tp=2");
    });
  }
}

TEST(TensorParallelGptTraining, TwoByTwoMeshFollowsTheSingleProcessLossCurve) {
  const std::vector<Batch> batches = random_batches();
  const std::vector<double> want = single_process_losses(batches, 12);
  auto full = gpt_from_seed(12);
  run_world_ranks(4, [&](World& world, std::shared_ptr<ProcessGroup>) {
    DeviceMesh mesh(world, "cpu", {2, 2}, {"dp", "tp"});
    const int64_t dp_rank = mesh.get_local_rank("dp");
    expect_same_curve(
        parallel_losses(*full, batches, mesh.get_group("tp"), mesh.get_group("dp").get(), 2 * dp_rank, 2, {}), want,
        "tp=2 x dp=2");
  });
}

// 3-D shape on 4 ranks: two pipeline stages ("pp"), each split over two
// tensor-parallel ranks ("tp"); 1F1B over 2 micro-batches. The last
// stage's ranks report the batch loss.
TEST(TensorParallelGptTraining, PipelineOfTensorParallelStagesFollowsTheSingleProcessLossCurve) {
  namespace pipe = distributed::pipeline;
  const std::vector<Batch> batches = random_batches();
  const std::vector<double> want = single_process_losses(batches, 13);
  auto full = gpt_from_seed(13);
  run_world_ranks(4, [&](World& world, std::shared_ptr<ProcessGroup>) {
    DeviceMesh mesh(world, "cpu", {2, 2}, {"pp", "tp"});
    TensorParallelGpt gpt(*full, mesh.get_group("tp"));
    // [embeddings, block 0] on stage 0; [block 1, LayerNorm, head] on stage 1.
    auto stage = distributed::stage_of_sequential(*gpt.as_sequential(), mesh.get_local_rank("pp"), 2, {2});
    pipe::PipelineExecutor executor(
        stage, mesh.get_group("pp"),
        [&](const Tensor& logits, const Tensor& targets) { return gpt.loss_of_logits(logits, targets); },
        {.schedule = pipe::ScheduleKind::OneFOneB, .micro_batches = 2});
    nn::optim::AdamW opt(stage->parameters(), kAdamW);
    std::vector<double> losses;
    for (const Batch& b : batches) {
      opt.zero_grad();
      pipe::PipelineStepResult r = executor.train_step(b.tokens, b.targets);
      opt.step();
      losses.push_back(r.loss);
    }
    if (executor.is_last()) expect_same_curve(losses, want, "pp=2 x tp=2");
  });
}

}  // namespace
}  // namespace anvil::samples
