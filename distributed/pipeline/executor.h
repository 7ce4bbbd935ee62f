#pragma once
/// @file
/// Runs a pipeline schedule on this rank's stage: splits the mini-batch into
/// micro-batches, walks the stage's step list (schedule.h), computes the loss
/// on the last stage and leaves the accumulated gradients in the stage's
/// parameters, ready for the optimizer step.
///
///     PipelineExecutor pipe(my_stage_module, group, loss_fn,
///                           {.schedule = ScheduleKind::OneFOneB, .micro_batches = 8});
///     for (...) {
///       stage_module->zero_grad();
///       auto r = pipe.train_step(batch.data, batch.target);  // data used on stage 0, target on the last
///       optimizer.step();
///       if (pipe.is_last()) std::cout << r.loss;
///     }
///
/// Every rank of the group is one stage (stage = rank), and every rank calls
/// train_step with a batch of the same size (data loaders with one seed).
/// Each run of consecutive sends and receives in the step list is posted as
/// one batch (one NCCL group on CUDA stages; stage.h, "Transport").
///
/// The loss of micro-batch i (n_i of the batch's N samples) is weighted by
/// n_i / N before its backward, so for a loss that averages over samples the
/// summed gradients equal those of the unpipelined model on the whole batch.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "distributed/pipeline/schedule.h"
#include "distributed/pipeline/stage.h"

namespace anvil::distributed::pipeline {

/// The last stage's output and the micro-batch's target -> scalar loss.
using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;

/// PipelineExecutor's settings.
struct PipelineOptions {
  ScheduleKind schedule = ScheduleKind::OneFOneB;  ///< GPipe or OneFOneB
  int micro_batches = 4;  ///< micro-batches each mini-batch is cut into
  Device device = Device::cpu();  ///< where this stage computes
  bool record_timeline = false;  ///< keep each step's start and end (for the Chrome trace)
};

/// What one train_step measured on this stage.
struct PipelineStepResult {
  double loss = std::numeric_limits<double>::quiet_NaN();  ///< the batch's loss, on the last stage only
  double seconds = 0;  ///< this stage's wall time for the step
  double wait_seconds = 0;  ///< of which blocked on a recv or an unfinished send
  double bubble_fraction = 0;  ///< wait_seconds / seconds, measured on this stage
  double theoretical_bubble_fraction = 0;  ///< (p - 1) / (m + p - 1)
  int max_live_activations = 0;  ///< micro-batches alive at once on this stage
};

/// One executed step of the timeline; times in microseconds of steady_clock
/// (one clock for every process of a machine).
struct TimelineEvent {
  StepKind kind;  ///< what the step did
  int micro_batch;  ///< which micro-batch
  ///@{
  /// start and end, microseconds of steady_clock
  int64_t start_us, end_us;
  ///@}
};

/// Runs a pipeline schedule on this rank's stage, one train_step per mini-batch (see the file comment).
class PipelineExecutor {
 public:
  /// This rank's stage over `stage_module` in `group`, with `loss` on the last stage; collective, as PipelineStage's
  /// constructor.
  PipelineExecutor(std::shared_ptr<nn::Module> stage_module, std::shared_ptr<ProcessGroup> group, LossFn loss,
                   PipelineOptions options = {});

  /// Forward and backward of one mini-batch (gradients accumulate into the
  /// stage's parameters; zero them before, step the optimizer after).
  PipelineStepResult train_step(const Tensor& input, const Tensor& target);
  /// Forward only, without gradients; returns the batch's loss on the last
  /// stage (NaN on the others).
  double evaluate(const Tensor& input, const Tensor& target);

  bool is_first() const { return stage_.is_first(); }  ///< Whether this is stage 0.
  bool is_last() const { return stage_.is_last(); }  ///< Whether this is the last stage.
  int stage() const { return stage_.stage(); }  ///< This stage's index.
  int num_stages() const { return stage_.num_stages(); }  ///< Stages in the pipeline.
  const Schedule& schedule() const { return schedule_; }  ///< The schedule it runs.
  const PipelineOptions& options() const { return options_; }  ///< The settings it was made with.
  /// Where activations and gradients travel (stage.h, "Transport").
  Device transport_device() const { return stage_.transport_device(); }
  /// The last train_step's events on this stage (when record_timeline).
  const std::vector<TimelineEvent>& timeline() const { return timeline_; }

  /// Collective (every stage calls it): gathers the last step's timelines and
  /// stage 0 writes a Chrome trace (chrome://tracing, ui.perfetto.dev) with
  /// one track per stage: forwards, backwards, and the waits that are the bubble.
  void write_chrome_trace(const std::string& path);

 private:
  std::vector<Tensor> split(const Tensor& batch) const;

  PipelineStage stage_;
  LossFn loss_;
  PipelineOptions options_;
  Schedule schedule_;
  std::vector<std::vector<Step>> time_steps_;  ///< this stage's steps, each run of sends and receives together
  std::vector<TimelineEvent> timeline_;
  std::map<int, Tensor> pending_losses_;  ///< last stage: loss of each forwarded micro-batch until its backward
};

/// [N, ...] -> m chunks along dim 0 whose sizes differ by at most one (as
/// torch.tensor_split). Views, no copies.
std::vector<Tensor> split_micro_batches(const Tensor& batch, int m);

/// The Chrome trace JSON for events[stage] (what write_chrome_trace writes).
std::string chrome_trace_json(const std::vector<std::vector<TimelineEvent>>& events);

}  // namespace anvil::distributed::pipeline
