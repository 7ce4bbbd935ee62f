// A schedule's communication under NCCL's rules (schedule_p2p.cpp): time
// steps, and that posting each as one group cannot deadlock where posting the
// calls one by one does.
#include <gtest/gtest.h>

#include <string>

#include "core/base/error.h"
#include "distributed/pipeline/schedule.h"

namespace anvil::distributed::pipeline {
namespace {

std::string joined(const std::vector<std::vector<Step>>& time_steps) {
  std::string out;
  for (const auto& ts : time_steps) {
    out += '[';
    for (size_t i = 0; i < ts.size(); ++i) out += (i ? " " : "") + to_string(ts[i]);
    out += ']';
  }
  return out;
}

std::string error_of(const Schedule& s, P2PIssue issue) {
  try {
    check_unbuffered_p2p(s, issue);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ScheduleP2P, TimeStepsJoinConsecutiveSendsAndReceives) {
  Schedule s = one_f_one_b_schedule(2, 3);
  EXPECT_EQ(joined(time_steps(s.stages[0])), "[F0][SA0][F1][SA1 RG0][B0][F2][SA2 RG1][B1][RG2][B2]") << s.str();
  EXPECT_EQ(joined(time_steps(s.stages[1])), "[RA0][F0][B0][SG0 RA1][F1][B1][SG1 RA2][F2][B2][SG2]") << s.str();
  EXPECT_TRUE(time_steps({}).empty());
  EXPECT_TRUE(is_communication(StepKind::RecvGrad));
  EXPECT_FALSE(is_communication(StepKind::Backward));
}

// What the executor does on NCCL: every shape of both schedules completes.
TEST(ScheduleP2P, EveryScheduleCompletesWithOneGroupPerTimeStep) {
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (int p = 1; p <= 6; ++p)
      for (int m = 1; m <= 10; ++m) {
        Schedule s = make_schedule(kind, p, m);
        EXPECT_EQ(error_of(s, P2PIssue::PerTimeStep), "") << s.str();
      }
}

// Why it groups: 1F1B's steady state, issued one call at a time, deadlocks
// on unbuffered sends as soon as two micro-batches overlap.
TEST(ScheduleP2P, OneFOneBIssuedCallByCallDeadlocks) {
  for (int p = 2; p <= 5; ++p)
    for (int m = 2; m <= 8; ++m) {
      Schedule s = one_f_one_b_schedule(p, m);
      std::string e = error_of(s, P2PIssue::PerStep);
      EXPECT_NE(e.find("deadlock with unbuffered point-to-point calls"), std::string::npos) << e << "\n" << s.str();
      EXPECT_NE(e.find("as one group"), std::string::npos) << e;
    }
  // One micro-batch has nothing to overlap with.
  EXPECT_EQ(error_of(one_f_one_b_schedule(3, 1), P2PIssue::PerStep), "");
}

TEST(ScheduleP2P, NamesTheDeadlockedStagesAndCalls) {
  std::string e = error_of(one_f_one_b_schedule(2, 2), P2PIssue::PerStep);
  // Stage 0 sends activation 1 while stage 1 sends gradient 0: each waits for
  // the other's receive, queued behind.
  EXPECT_NE(e.find("stage 0 issued [SA1]"), std::string::npos) << e;
  EXPECT_NE(e.find("stage 1 is stuck before it at [SG0]"), std::string::npos) << e;
}

TEST(ScheduleP2P, MessagesOutOfOrderAreReportedSinceNcclHasNoTags) {
  Schedule s = gpipe_schedule(2, 2);
  s.stages[1] = {{StepKind::RecvActivation, 1}, {StepKind::RecvActivation, 0}, {StepKind::Forward, 0},
                 {StepKind::Forward, 1},        {StepKind::Backward, 0},       {StepKind::SendGrad, 0},
                 {StepKind::Backward, 1},       {StepKind::SendGrad, 1}};
  std::string e = error_of(s, P2PIssue::PerTimeStep);
  EXPECT_NE(e.find("message 0 from stage 0 to stage 1 is SA0 on the sender but RA1 on the receiver"), std::string::npos)
      << e;
  EXPECT_NE(e.find("NCCL has no tags"), std::string::npos) << e;
}

TEST(ScheduleP2P, UnmatchedMessagesAreReported) {
  Schedule s = gpipe_schedule(2, 2);
  s.stages[1].erase(s.stages[1].begin());  // stage 1 forgets to receive activation 0
  std::string e = error_of(s, P2PIssue::PerTimeStep);
  EXPECT_NE(e.find("stage 0 sends 2 messages to stage 1, which receives 1"), std::string::npos) << e;
}

}  // namespace
}  // namespace anvil::distributed::pipeline
