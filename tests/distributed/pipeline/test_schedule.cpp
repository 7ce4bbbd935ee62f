// The schedules as data: every rule is checked on the step lists themselves,
// without running a model or a process group.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "core/base/error.h"
#include "distributed/pipeline/schedule.h"

namespace anvil::distributed::pipeline {
namespace {

using Kind = ScheduleKind;

int count(const std::vector<Step>& steps, StepKind kind, int mb) {
  int n = 0;
  for (const Step& s : steps) n += s.kind == kind && s.micro_batch == mb;
  return n;
}

class ScheduleShapes : public ::testing::TestWithParam<std::tuple<Kind, int, int>> {};

TEST_P(ScheduleShapes, EveryMicroBatchForwardedAndBackwardedOncePerStage) {
  auto [kind, p, m] = GetParam();
  Schedule s = make_schedule(kind, p, m);
  ASSERT_EQ(static_cast<int>(s.stages.size()), p);
  for (int stage = 0; stage < p; ++stage)
    for (int mb = 0; mb < m; ++mb) {
      const auto& steps = s.stages[static_cast<size_t>(stage)];
      EXPECT_EQ(count(steps, StepKind::Forward, mb), 1) << "stage " << stage << " mb " << mb << "\n" << s.str();
      EXPECT_EQ(count(steps, StepKind::Backward, mb), 1) << "stage " << stage << " mb " << mb << "\n" << s.str();
    }
}

TEST_P(ScheduleShapes, SendsMatchRecvsAcrossNeighbours) {
  auto [kind, p, m] = GetParam();
  Schedule s = make_schedule(kind, p, m);
  for (int stage = 0; stage + 1 < p; ++stage)
    for (int mb = 0; mb < m; ++mb) {
      const auto& here = s.stages[static_cast<size_t>(stage)];
      const auto& next = s.stages[static_cast<size_t>(stage + 1)];
      EXPECT_EQ(count(here, StepKind::SendActivation, mb), 1);
      EXPECT_EQ(count(next, StepKind::RecvActivation, mb), 1);
      EXPECT_EQ(count(next, StepKind::SendGrad, mb), 1);
      EXPECT_EQ(count(here, StepKind::RecvGrad, mb), 1);
    }
  // The ends talk to nobody.
  for (int mb = 0; mb < m; ++mb) {
    EXPECT_EQ(count(s.stages.front(), StepKind::RecvActivation, mb), 0);
    EXPECT_EQ(count(s.stages.front(), StepKind::SendGrad, mb), 0);
    EXPECT_EQ(count(s.stages.back(), StepKind::SendActivation, mb), 0);
    EXPECT_EQ(count(s.stages.back(), StepKind::RecvGrad, mb), 0);
  }
}

TEST_P(ScheduleShapes, PassesValidationAndNeverDeadlocks) {
  auto [kind, p, m] = GetParam();
  Schedule s = make_schedule(kind, p, m);
  EXPECT_NO_THROW(validate_schedule(s)) << s.str();
}

TEST_P(ScheduleShapes, LiveActivationsBound) {
  auto [kind, p, m] = GetParam();
  Schedule s = make_schedule(kind, p, m);
  int stage0 = max_live_activations(s.stages[0]);
  if (kind == Kind::GPipe) {
    EXPECT_EQ(stage0, m);  // everything forwarded before the first backward
  } else {
    EXPECT_EQ(stage0, std::min(p, m));  // the 1F1B bound, independent of m
    for (int stage = 0; stage < p; ++stage)
      EXPECT_LE(max_live_activations(s.stages[static_cast<size_t>(stage)]), std::min(p - stage, m));
  }
}

TEST_P(ScheduleShapes, SimulatedBubbleMatchesTheory) {
  auto [kind, p, m] = GetParam();
  // Equal cost per stage and micro-batch: the idealised bubble is (p-1)/(m+p-1)
  // for both schedules, whatever the forward/backward ratio.
  for (SimulationCosts c : {SimulationCosts{1.0, 1.0}, SimulationCosts{1.0, 2.0}}) {
    SimulatedRun run = simulate_schedule(make_schedule(kind, p, m), c);
    EXPECT_NEAR(run.bubble_fraction(), theoretical_bubble_fraction(p, m), 1e-12)
        << to_string(kind) << " p=" << p << " m=" << m;
    EXPECT_NEAR(run.makespan, (m + p - 1) * (c.forward_cost + c.backward_cost), 1e-12);
  }
}

INSTANTIATE_TEST_SUITE_P(Pipeline, ScheduleShapes,
                         ::testing::Combine(::testing::Values(Kind::GPipe, Kind::OneFOneB),
                                            ::testing::Values(1, 2, 3, 4), ::testing::Values(1, 2, 3, 4, 8)),
                         [](const auto& case_info) {
                           return std::string(to_string(std::get<0>(case_info.param))) + "_p" +
                                  std::to_string(std::get<1>(case_info.param)) + "_m" +
                                  std::to_string(std::get<2>(case_info.param));
                         });

TEST(Schedule, OneFOneBOrderOnFourStages) {
  Schedule s = one_f_one_b_schedule(4, 6);
  // Stage 0: three warm-up forwards, then alternate, then three backwards.
  std::vector<Step> stage0;
  for (const Step& st : s.stages[0])
    if (st.kind == StepKind::Forward || st.kind == StepKind::Backward) stage0.push_back(st);
  std::vector<Step> expected = {{StepKind::Forward, 0},  {StepKind::Forward, 1},  {StepKind::Forward, 2},
                                {StepKind::Forward, 3},  {StepKind::Backward, 0}, {StepKind::Forward, 4},
                                {StepKind::Backward, 1}, {StepKind::Forward, 5},  {StepKind::Backward, 2},
                                {StepKind::Backward, 3}, {StepKind::Backward, 4}, {StepKind::Backward, 5}};
  EXPECT_EQ(stage0, expected) << s.str();
  // The last stage has no warm-up: F0 B0 F1 B1 ...
  const auto& last = s.stages[3];
  EXPECT_EQ(last[0], (Step{StepKind::RecvActivation, 0}));
  EXPECT_EQ(last[1], (Step{StepKind::Forward, 0}));
  EXPECT_EQ(last[2], (Step{StepKind::Backward, 0}));
  EXPECT_EQ(last[3], (Step{StepKind::SendGrad, 0}));
}

TEST(Schedule, PrintsAndDumps) {
  Schedule s = gpipe_schedule(2, 2);
  EXPECT_EQ(s.str(),
            "gpipe schedule, 2 stages, 2 micro-batches\n"
            "stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1\n"
            "stage 1: RA0 F0 RA1 F1 B0 SG0 B1 SG1\n");
  EXPECT_EQ(s.to_json(),
            "{\"schedule\": \"gpipe\", \"stages\": 2, \"micro_batches\": 2, \"steps\": "
            "[[\"F0\", \"SA0\", \"F1\", \"SA1\", \"RG0\", \"B0\", \"RG1\", \"B1\"], "
            "[\"RA0\", \"F0\", \"RA1\", \"F1\", \"B0\", \"SG0\", \"B1\", \"SG1\"]]}");
  EXPECT_EQ(schedule_kind_from_string("1f1b"), Kind::OneFOneB);
  EXPECT_THROW(schedule_kind_from_string("zigzag"), Error);
}

TEST(Schedule, ValidationCatchesBrokenSchedules) {
  auto expect_error = [](Schedule s, const std::string& needle) {
    try {
      validate_schedule(s);
      ADD_FAILURE() << "no error for\n" << s.str();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  {  // a missing backward
    Schedule s = gpipe_schedule(2, 2);
    auto& st = s.stages[1];
    st.erase(std::find(st.begin(), st.end(), Step{StepKind::Backward, 1}));
    expect_error(s, "never backwards micro-batch 1");
  }
  {  // a forward run twice
    Schedule s = gpipe_schedule(2, 2);
    s.stages[0].push_back({StepKind::Forward, 0});
    expect_error(s, "twice");
  }
  {  // an activation sent before it was computed
    Schedule s = gpipe_schedule(2, 1);
    s.stages[0] = {
        {StepKind::SendActivation, 0}, {StepKind::Forward, 0}, {StepKind::RecvGrad, 0}, {StepKind::Backward, 0}};
    expect_error(s, "after its forward");
  }
  {  // stage 0 waits for a gradient before sending the activation that causes it
    Schedule s = gpipe_schedule(2, 1);
    s.stages[0] = {
        {StepKind::Forward, 0}, {StepKind::RecvGrad, 0}, {StepKind::SendActivation, 0}, {StepKind::Backward, 0}};
    expect_error(s, "deadlock");
  }
  {  // both stages receive before they send: each rule holds, the order deadlocks
    Schedule s = gpipe_schedule(2, 2);
    s.stages[1] = {{StepKind::RecvActivation, 1}, {StepKind::Forward, 1},  {StepKind::RecvActivation, 0},
                   {StepKind::Forward, 0},        {StepKind::Backward, 0}, {StepKind::SendGrad, 0},
                   {StepKind::Backward, 1},       {StepKind::SendGrad, 1}};
    s.stages[0] = {{StepKind::Forward, 0},  {StepKind::SendActivation, 0}, {StepKind::RecvGrad, 0},
                   {StepKind::Forward, 1},  {StepKind::SendActivation, 1}, {StepKind::Backward, 0},
                   {StepKind::RecvGrad, 1}, {StepKind::Backward, 1}};
    expect_error(s, "deadlock");
  }
  EXPECT_THROW(gpipe_schedule(0, 2), Error);
  EXPECT_THROW(one_f_one_b_schedule(2, 0), Error);
}

TEST(Schedule, TheoreticalBubble) {
  EXPECT_DOUBLE_EQ(theoretical_bubble_fraction(1, 8), 0.0);
  EXPECT_DOUBLE_EQ(theoretical_bubble_fraction(4, 8), 3.0 / 11.0);
}

}  // namespace
}  // namespace anvil::distributed::pipeline
