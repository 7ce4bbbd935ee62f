#pragma once
/// @file
/// Pipeline schedules as data: for each stage, the ordered list of steps it
/// runs for one mini-batch of m micro-batches. The executor (executor.h) only
/// walks a list; which schedule it walks is a value that can be printed,
/// checked and simulated without running a model.
///
///     Schedule s = make_schedule(ScheduleKind::OneFOneB, /*stages=*/4, /*micro_batches=*/8);
///     std::cout << s.str();        // one line per stage: "stage 0: F0 S0 F1 S1 ..."
///     validate_schedule(s);        // throws anvil::Error naming the first broken rule
///
/// GPipe: every forward, then every backward. Stage s keeps all m micro-batches'
/// activations alive until the backwards start.
/// 1F1B (PipeDream-Flush): stage s runs p-s-1 warm-up forwards, then
/// alternates one forward and one backward, then drains the remaining
/// backwards. At most p-s micro-batches are alive on stage s (p on stage 0),
/// independent of m; the bubble is the same as GPipe's.
#include <string>
#include <vector>

namespace anvil::distributed::pipeline {

/// What a step does: compute a micro-batch's forward or backward, or send or receive its activation or gradient.
enum class StepKind { Forward, Backward, SendActivation, RecvActivation, SendGrad, RecvGrad };
const char* to_string(StepKind kind);  ///< "Forward", "Backward", "SendActivation", ...
/// Short form used in printed schedules: F, B, SA, RA, SG, RG.
const char* short_name(StepKind kind);

/// One step of a stage: what it does, for which micro-batch.
struct Step {
  StepKind kind;  ///< what the step does
  int micro_batch;  ///< which micro-batch
  bool operator==(const Step&) const = default;  ///< Same kind and micro-batch.
};
std::string to_string(const Step& step);  ///< "F3", "RA3", ...

/// GPipe (all forwards, then all backwards) or 1F1B.
enum class ScheduleKind { GPipe, OneFOneB };
const char* to_string(ScheduleKind kind);  ///< "gpipe", "1f1b"
ScheduleKind schedule_kind_from_string(const std::string& name);  ///< accepts "gpipe", "1f1b"

/// A whole schedule: every stage's list of steps.
struct Schedule {
  ScheduleKind kind = ScheduleKind::GPipe;  ///< GPipe or OneFOneB
  int num_stages = 0;  ///< p
  int num_micro_batches = 0;  ///< m
  std::vector<std::vector<Step>> stages;  ///< stages[s] = steps stage s runs, in order

  /// One line per stage: "stage 0: F0 SA0 F1 SA1 ... RG0 B0 ...".
  std::string str() const;
  /// {"schedule": "1f1b", "stages": p, "micro_batches": m, "steps": [["F0", "SA0", ...], ...]}
  std::string to_json() const;
};

Schedule gpipe_schedule(int num_stages, int num_micro_batches);  ///< GPipe's steps for p stages and m micro-batches.
/// 1F1B's (PipeDream-Flush) steps for p stages and m micro-batches.
Schedule one_f_one_b_schedule(int num_stages, int num_micro_batches);
/// The schedule `kind` for p stages and m micro-batches.
Schedule make_schedule(ScheduleKind kind, int num_stages, int num_micro_batches);

/// The largest number of micro-batches whose activations a stage holds at once
/// (forwarded, not yet backwarded) when it runs `steps` in order.
int max_live_activations(const std::vector<Step>& steps);

/// Checks the rules every schedule must keep and throws anvil::Error naming the
/// stage, step and rule broken: each micro-batch is forwarded and backwarded
/// exactly once per stage, its backward after its forward; a stage > 0
/// receives an activation before each forward and sends a gradient after each
/// backward; a stage < p-1 sends each forward's output and receives its
/// gradient before the backward; every send has the matching recv on the
/// neighbour; running all stages with buffered sends never deadlocks; and
/// neither does running them unbuffered, one time step per NCCL group
/// (check_unbuffered_p2p).
void validate_schedule(const Schedule& schedule);

/// A run of the schedule on an idealised machine (forward costs forward_cost,
/// backward backward_cost, communication is free; a recv waits for its send).
struct SimulatedRun {
  double makespan = 0;  ///< time the last stage finishes
  std::vector<double> busy;  ///< per stage: time spent computing
  double bubble_fraction() const;  ///< idle / (stages * makespan)
};
/// The idealised costs simulate_schedule runs with.
struct SimulationCosts {
  double forward_cost = 1.0;  ///< time of one micro-batch's forward
  double backward_cost = 2.0;  ///< time of one micro-batch's backward
};
/// Runs the schedule on the idealised machine SimulatedRun describes.
SimulatedRun simulate_schedule(const Schedule& schedule, const SimulationCosts& costs = {});

/// Sends and receives (the steps that talk to a neighbour), as opposed to
/// Forward and Backward.
bool is_communication(StepKind kind);

/// A stage's steps cut into time steps: each Forward or Backward alone, and
/// each run of consecutive sends and receives as one time step. The executor
/// posts a run with one batch_isend_irecv (one NCCL group): 1F1B's "send
/// activation k, receive gradient j" against the neighbour's "send gradient
/// j, receive activation k" then progress together instead of each waiting
/// for the other (see check_unbuffered_p2p).
std::vector<std::vector<Step>> time_steps(const std::vector<Step>& steps);

/// How check_unbuffered_p2p issues a stage's sends and receives.
enum class P2PIssue {
  PerTimeStep,  ///< each run of time_steps together (what the executor does)
  PerStep,  ///< each send or receive alone (the pattern NCCL deadlocks on)
};

/// Runs the schedule's communication with NCCL's point-to-point rules: no
/// tags (the messages from one stage to another match in issue order, so
/// both sides must name the same micro-batches in the same order), nothing
/// buffered (a send or receive completes only once the peer has issued the
/// matching call), and each stage issues its calls in order, the calls of one
/// batch together, the next batch once this one completed. Throws
/// anvil::Error naming the stages and steps on a mismatched order or a
/// deadlock. validate_schedule runs it with PerTimeStep.
void check_unbuffered_p2p(const Schedule& schedule, P2PIssue issue = P2PIssue::PerTimeStep);

/// (p - 1) / (m + p - 1): the idle share of GPipe and 1F1B when every stage
/// takes the same time per micro-batch.
double theoretical_bubble_fraction(int num_stages, int num_micro_batches);

}  // namespace anvil::distributed::pipeline
