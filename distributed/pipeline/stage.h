#pragma once
// One pipeline stage: this rank's part of the model, and the traffic with the
// neighbouring stages. Stage s is rank s of the group; it receives
// activations from rank s-1 and sends its output to rank s+1; in backward it
// receives its output's gradient from s+1 and sends its input's gradient to
// s-1. Everything is keyed by micro-batch, so a schedule can interleave them.
//
// Used directly (one micro-batch, no schedule), it is layer-split model
// parallelism across processes:
//
//   PipelineStage stage(my_part, group);
//   Tensor out = stage.forward(x);               // x used on stage 0 only
//   if (stage.is_last()) stage.backward(loss_fn(out, y)); else stage.backward();
//
// Activations travel with a small header (dtype and shape), so a receiver
// needs no shape in advance and micro-batches may differ in size. Sends are
// asynchronous: they are waited for in wait_for_sends(), and a stage never
// blocks on a send, only on a recv (which is what keeps 1F1B deadlock-free).
//
// Transport: activations and gradients cross between stages as CPU tensors
// (Gloo), also when the stage computes on a GPU. NCCL matches point-to-point
// operations in issue order on one stream, where a stage's "send activation k,
// then receive gradient j" against its neighbour's "send gradient j, then
// receive activation k" (1F1B's steady state) can block both streams; doing it
// on the GPU needs the send and recv of one time step issued as one NCCL
// group. ProcessGroup::batch_isend_irecv offers that now (and the emulated
// NCCL reports the ungrouped pattern as a deadlock); the schedules do not yet
// post their time steps as batches, so stages still exchange over Gloo.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "distributed/process_group.h"
#include "nn/module.h"

namespace anvil::distributed::pipeline {

struct StageOptions {
  Device device = Device::cpu();  // where this stage computes (its module must live there)
};

class PipelineStage {
 public:
  PipelineStage(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group, StageOptions options = {});

  int stage() const { return stage_; }
  int num_stages() const { return num_stages_; }
  bool is_first() const { return stage_ == 0; }
  bool is_last() const { return stage_ == num_stages_ - 1; }
  nn::Module& module() { return *module_; }
  ProcessGroup& group() { return *group_; }
  Device device() const { return options_.device; }

  // --- per micro-batch steps (what a schedule's steps call) ---
  // Blocks until the activation arrives; returns the seconds spent waiting.
  double recv_activation(int mb);
  // Runs the module on micro-batch mb: on stage 0 on `input` (moved to the
  // stage's device), elsewhere on the received activation. Returns the output.
  Tensor forward_micro_batch(int mb, const Tensor& input = {});
  void send_activation(int mb);
  double recv_grad(int mb);
  // Backward of micro-batch mb: from `loss` on the last stage, from the
  // received output gradient elsewhere. Frees the micro-batch's activations.
  void backward_micro_batch(int mb, const Tensor& loss = {});
  void send_grad(int mb);
  // Waits for every send posted so far; returns the seconds spent waiting.
  double wait_for_sends();
  // Forgets every micro-batch's saved tensors (after an evaluation pass).
  void clear();

  // Micro-batches forwarded and not yet backwarded, now and at most since
  // reset_peak().
  int live_activations() const { return live_; }
  int peak_live_activations() const { return peak_live_; }
  void reset_peak() { peak_live_ = live_; }

  // --- one micro-batch, no schedule ---
  Tensor forward(const Tensor& input = {});
  void backward(const Tensor& loss = {});

 private:
  struct MicroBatch {
    Tensor input;   // received activation (a leaf that collects its gradient), or stage 0's input
    Tensor output;  // the module's output (with its graph) until backward
    Tensor output_grad;
  };
  MicroBatch& state(int mb);
  double wait(const WorkHandle& work);

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  StageOptions options_;
  int stage_, num_stages_;
  std::map<int, MicroBatch> micro_batches_;
  std::vector<std::pair<WorkHandle, std::vector<Tensor>>> pending_sends_;  // keep tensors alive until sent
  int live_ = 0, peak_live_ = 0;
};

// Tags of the point-to-point messages of micro-batch mb (kept below Gloo's 2^24).
int activation_header_tag(int mb);
int activation_tag(int mb);
int grad_tag(int mb);

}  // namespace anvil::distributed::pipeline
