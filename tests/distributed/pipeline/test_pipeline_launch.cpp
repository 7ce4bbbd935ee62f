// Pipeline parallelism with real processes (anvil-run, Gloo on loopback):
// each worker checks its stage against the unpipelined model (see
// workers/pipeline.cpp); here we check that every rank said OK and what the
// executor measured.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "harness.h"
#include "tests/distributed/pipeline/pipeline_case.h"

namespace {

using anvil::test::run_ranks;

// The value of "key=..." in the rank's "OK ..." line, or -1.
double value_of(const anvil::test::RunResult& r, int rank, const std::string& key) {
  for (const std::string& line : r.lines_of(rank)) {
    if (line.rfind("OK ", 0) != 0) continue;
    auto at = line.find(key + "=");
    if (at != std::string::npos) return std::stod(line.substr(at + key.size() + 1));
  }
  return -1;
}

using Case = anvil::test::PipelineCase;

class PipelineEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(PipelineEquivalence, GradientsAndSgdStepMatchUnpipelinedModel) {
  const Case c = GetParam();
  // 10 samples in 4 micro-batches: sizes 3, 3, 2, 2 (the loss weights matter).
  auto r = run_ranks(c.stages, "pipeline", {"train", c.schedule, std::to_string(c.micro_batches), "--seed", "7"},
                     {.timeout = std::chrono::seconds(90)});
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < c.stages; ++rank) {
    EXPECT_GE(value_of(r, rank, "max_live"), 0) << "rank " << rank << " did not report OK\n" << r.output;
    // CPU stages exchange CPU tensors (Gloo).
    bool on_cpu = false;
    for (const std::string& line : r.lines_of(rank)) on_cpu = on_cpu || line.find("transport=cpu") != std::string::npos;
    EXPECT_TRUE(on_cpu) << "rank " << rank << "\n" << r.output;
    double bubble = value_of(r, rank, "bubble");
    EXPECT_GE(bubble, 0.0);
    EXPECT_LE(bubble, 1.0);
  }
  int stage0_live = static_cast<int>(value_of(r, 0, "max_live"));
  if (c.schedule == "1f1b") {
    EXPECT_LE(stage0_live, c.stages) << r.output;  // the 1F1B bound, measured by the executor
    EXPECT_EQ(stage0_live, std::min(c.stages, c.micro_batches)) << r.output;
  } else {
    EXPECT_EQ(stage0_live, c.micro_batches) << r.output;
  }
}

INSTANTIATE_TEST_SUITE_P(Launch, PipelineEquivalence,
                         ::testing::Values(Case{2, "gpipe", 4}, Case{2, "1f1b", 4}, Case{3, "gpipe", 4},
                                           Case{3, "1f1b", 4}, Case{3, "1f1b", 10}),
                         [](const auto& case_info) {
                           return case_info.param.schedule + "_" + std::to_string(case_info.param.stages) + "stages_m" +
                                  std::to_string(case_info.param.micro_batches);
                         });

TEST(PipelineLaunch, StageModuleSendsActivationsAndGradients) {
  auto r = run_ranks(3, "pipeline", {"stage", "--seed", "3"}, {.timeout = std::chrono::seconds(60)});
  ASSERT_FALSE(r.timed_out) << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(PipelineLaunch, WritesChromeTraceWithOneTrackPerStage) {
  auto path = std::filesystem::temp_directory_path() / ("anvil_pipeline_trace_" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(path);
  auto r = run_ranks(3, "pipeline", {"train", "1f1b", "6", "--batch", "12", "--trace", path.string()},
                     {.timeout = std::chrono::seconds(60)});
  ASSERT_FALSE(r.timed_out) << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "no trace at " << path;
  auto doc = nlohmann::json::parse(in);
  std::map<int, int> forwards, backwards;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["cat"] == "forward") ++forwards[e["tid"].get<int>()];
    if (e["cat"] == "backward") ++backwards[e["tid"].get<int>()];
  }
  for (int stage = 0; stage < 3; ++stage) {
    EXPECT_EQ(forwards[stage], 6) << "stage " << stage;
    EXPECT_EQ(backwards[stage], 6) << "stage " << stage;
  }
  std::filesystem::remove(path);
}

}  // namespace
