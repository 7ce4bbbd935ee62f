// The executor's pieces that need no second process: micro-batch splitting,
// a one-stage pipeline (plain gradient accumulation), misuse errors, and the
// Chrome trace format. Multi-stage runs are in test_pipeline_launch.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "distributed/pipeline/executor.h"
#include "nn/layers/layers.h"
#include "rank_threads.h"

namespace anvil::distributed::pipeline {
namespace {

TEST(PipelineExecutor, SplitsIntoNearlyEqualMicroBatches) {
  Tensor batch = arange(10, kInt64);
  auto parts = split_micro_batches(batch, 4);
  ASSERT_EQ(parts.size(), 4u);
  std::vector<int64_t> sizes, firsts;
  for (const Tensor& p : parts) {
    sizes.push_back(p.size(0));
    firsts.push_back(p.to_vector<int64_t>()[0]);
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(firsts, (std::vector<int64_t>{0, 3, 6, 8}));
  EXPECT_THROW(split_micro_batches(batch, 11), Error);  // fewer samples than micro-batches
  EXPECT_THROW(split_micro_batches(batch, 0), Error);
}

Tensor mse(const Tensor& out, const Tensor& target) { return mse_loss(out, target); }

std::shared_ptr<nn::Sequential> make_model(uint64_t seed) {
  manual_seed(seed);
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(5, 7), std::make_shared<nn::Tanh>(),
                                              std::make_shared<nn::Linear>(7, 2));
  seq->to(kFloat64);
  return seq;
}

TEST(PipelineExecutor, OneStageIsGradientAccumulationOverMicroBatches) {
  testing::run_ranks(1, [](std::shared_ptr<ProcessGroup> group) {
    Tensor x = randn({9, 5}, kFloat64), y = randn({9, 2}, kFloat64);
    auto reference = make_model(4);
    mse(reference->forward(x), y).backward();
    for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
      auto model = make_model(4);
      PipelineExecutor pipe(model, group, mse, {.schedule = kind, .micro_batches = 4});
      PipelineStepResult r = pipe.train_step(x, y);
      EXPECT_NEAR(r.loss, mse(reference->forward(x), y).item<double>(), 1e-12);
      EXPECT_EQ(r.max_live_activations, kind == ScheduleKind::GPipe ? 4 : 1);
      EXPECT_DOUBLE_EQ(r.theoretical_bubble_fraction, 0.0);
      auto a = model->parameters(), b = reference->parameters();
      for (size_t i = 0; i < a.size(); ++i)
        EXPECT_LT((a[i].grad() - b[i].grad()).abs().max().item<double>(), 1e-12) << to_string(kind) << " param " << i;
    }
  });
}

TEST(PipelineExecutor, LastStageNeedsALossFunction) {
  testing::run_ranks(1, [](std::shared_ptr<ProcessGroup> group) {
    EXPECT_THROW(PipelineExecutor(make_model(1), group, nullptr), Error);
  });
}

TEST(PipelineExecutor, ChromeTraceHasOneTrackPerStage) {
  std::vector<std::vector<TimelineEvent>> events = {
      {{StepKind::Forward, 0, 100, 150}, {StepKind::SendActivation, 0, 150, 151}, {StepKind::RecvGrad, 0, 151, 300}},
      {{StepKind::RecvActivation, 0, 100, 160}, {StepKind::Forward, 0, 160, 200}}};
  auto doc = nlohmann::json::parse(chrome_trace_json(events));
  std::vector<std::string> names;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M") continue;
    names.push_back(std::to_string(e["tid"].get<int>()) + ":" + e["name"].get<std::string>() + "@" +
                    std::to_string(e["ts"].get<int64_t>()));
  }
  // Sends are left out; times start at the earliest event.
  EXPECT_EQ(names, (std::vector<std::string>{"0:F0@0", "0:RG0@51", "1:RA0@0", "1:F0@60"}));
}

}  // namespace
}  // namespace anvil::distributed::pipeline
