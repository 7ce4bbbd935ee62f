// Pipeline stages on CUDA tensors exchanging activations and gradients over
// NCCL (stage.h, "Transport"): real processes through anvil-run, each rank a
// stage of workers/pipeline.cpp on its GPU, checked against the whole model
// in one process after a few SGD steps. In the emulated-GPU build this is
// the emulated NCCL, whose watchdog turns the deadlock of ungrouped
// send/recv into an error; the grouped time steps must finish well inside
// it. Elsewhere (no NCCL, or fewer GPUs than stages) the tests skip.
#include <gtest/gtest.h>

#include <ostream>
#include <random>
#include <string>

#include "harness.h"
#include "nccl_ranks.h"
#include "tests/distributed/pipeline/pipeline_case.h"

namespace {

using anvil::test::contains;

using Case = anvil::test::PipelineCase;

class PipelineOverNccl : public ::testing::TestWithParam<Case> {};

TEST_P(PipelineOverNccl, CudaStagesMatchOneProcessAfterSgdSteps) {
  const Case c = GetParam();
  if (std::string why = anvil::test::why_nccl_ranks_cannot_run(c.stages); !why.empty()) GTEST_SKIP() << why;
  const std::string seed = std::to_string(std::random_device{}() % 100000);
  // 10 samples in 4 micro-batches: sizes 3, 3, 2, 2, so each activation's
  // shape travels ahead of it. A deadlock fails within the emulator's
  // watchdog (60 s), below the harness's bound.
  auto r = anvil::test::run_ranks(
      c.stages, "pipeline",
      {"train", c.schedule, std::to_string(c.micro_batches), "--steps", "3", "--device", "cuda", "--seed", seed},
      {.env = {{"ANVIL_EMU_NCCL_TIMEOUT", "60"}}, .timeout = std::chrono::seconds(300)});
  ASSERT_FALSE(r.timed_out) << "seed " << seed << "\n" << r.output;
  ASSERT_EQ(r.exit_code, 0) << "seed " << seed << "\n" << r.output;
  for (int rank = 0; rank < c.stages; ++rank) {
    bool ok = false, on_gpu = false;
    for (const std::string& line : r.lines_of(rank)) {
      ok = ok || line.rfind("OK ", 0) == 0;
      // The data went over NCCL on the GPU, not over Gloo on the host.
      on_gpu = on_gpu || (line.rfind("OK ", 0) == 0 && contains(line, "transport=cuda:"));
    }
    EXPECT_TRUE(ok) << "rank " << rank << " did not report OK\n" << r.output;
    EXPECT_TRUE(on_gpu) << "rank " << rank << " did not exchange CUDA tensors\n" << r.output;
  }
}

INSTANTIATE_TEST_SUITE_P(Launch, PipelineOverNccl,
                         ::testing::Values(Case{2, "gpipe", 4}, Case{2, "1f1b", 4}, Case{4, "1f1b", 6},
                                           Case{4, "gpipe", 4}),
                         [](const auto& case_info) {
                           return case_info.param.schedule + "_" + std::to_string(case_info.param.stages) + "stages_m" +
                                  std::to_string(case_info.param.micro_batches);
                         });

}  // namespace
