#pragma once
/// @file
/// One pipeline stage: this rank's part of the model, and the traffic with the
/// neighbouring stages. Stage s is rank s of the group; it receives
/// activations from rank s-1 and sends its output to rank s+1; in backward it
/// receives its output's gradient from s+1 and sends its input's gradient to
/// s-1. Everything is keyed by micro-batch, so a schedule can interleave them.
///
/// Used directly (one micro-batch, no schedule), it is layer-split model
/// parallelism across processes:
///
///     PipelineStage stage(my_part, group);
///     Tensor out = stage.forward(x);               // x used on stage 0 only
///     if (stage.is_last()) stage.backward(loss_fn(out, y)); else stage.backward();
///
/// Activations travel with a small header (dtype and shape), so a receiver
/// needs no shape in advance and micro-batches may differ in size. Sends are
/// asynchronous: they are waited for in wait_for_sends(), and a stage never
/// blocks on a send, only on a recv (which is what keeps 1F1B deadlock-free
/// on Gloo; on NCCL see below).
///
/// Transport. Activations and gradients travel on the stage's device when the
/// group carries tensors of that device itself, as DDP's buckets do: a CUDA
/// stage on a group with NCCL (make_process_group's "auto" backend, or a
/// subgroup of it) sends and receives CUDA tensors over NCCL. Otherwise (a CPU
/// stage, or a Gloo-only group) they cross as CPU tensors over Gloo.
/// transport_device() says which.
///
/// NCCL matches point-to-point calls in issue order on one stream and buffers
/// nothing, so 1F1B's "send activation k, then receive gradient j" against the
/// neighbour's "send gradient j, then receive activation k" blocks both
/// streams. exchange() therefore posts one time step's sends and receives (a
/// run of consecutive communication steps, schedule.h's time_steps) as one
/// batch_isend_irecv, one NCCL group; check_unbuffered_p2p proves every
/// schedule deadlock-free that way. Gloo gets the same batches (posted one by
/// one, which it does not mind).
///
/// Shapes: the header is a CPU tensor and goes over the group's CPU side
/// (Gloo) ahead of the data, whatever the transport; the receiver reads it on
/// the host before it posts the data's receive. This keeps micro-batches of
/// different sizes (tensor_split's 3, 3, 2, 2) and stages whose output shape
/// is not known in advance working with no shapes declared, costs no GPU
/// synchronisation (the sender knows the shape on the host as soon as its
/// forward is enqueued), and cannot deadlock: headers only flow forward, and a
/// stage's host blocks only on its predecessor's headers, never on its
/// successor. The price: a group without a CPU side (backend "nccl" alone)
/// cannot carry a pipeline; the constructor says so. With a GPU transport the
/// constructor is collective (every stage builds its PipelineStage): one tiny
/// all-reduce creates the NCCL communicator on every rank at once.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "distributed/pipeline/schedule.h"
#include "distributed/process_group/process_group.h"
#include "nn/module.h"

namespace anvil::distributed::pipeline {

/// A stage's settings.
struct StageOptions {
  Device device = Device::cpu();  ///< where this stage computes (its module must live there)
};

/// This rank's pipeline stage: its part of the model and the activation and gradient traffic with its neighbours (see
/// the file comment).
class PipelineStage {
 public:
  /// Stage `group.rank()` of `group.size()` over `module`; collective when the transport is a GPU.
  PipelineStage(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group, StageOptions options = {});

  int stage() const { return stage_; }  ///< This stage's index (its rank in the group).
  int num_stages() const { return num_stages_; }  ///< Stages in the pipeline (the group's size).
  bool is_first() const { return stage_ == 0; }  ///< Whether this is stage 0 (it takes the input).
  bool is_last() const {
    return stage_ == num_stages_ - 1;
  }  ///< Whether this is the last stage (it computes the loss).
  nn::Module& module() { return *module_; }  ///< This stage's part of the model.
  ProcessGroup& group() { return *group_; }  ///< The group the stages talk over.
  Device device() const { return options_.device; }  ///< Where this stage computes.
  /// Where activations and gradients travel (see "Transport" above).
  Device transport_device() const { return transport_; }

  // --- per micro-batch steps (what a schedule's steps call) ---
  /// Posts one time step's sends and receives (SendActivation,
  /// RecvActivation, SendGrad, RecvGrad steps) together as one
  /// batch_isend_irecv, then waits for the receives; returns the seconds
  /// spent waiting (on NCCL the wait is the compute stream's, not the host's,
  /// so only the headers' count).
  double exchange(const std::vector<Step>& steps);
  /// exchange() of one step. Blocks until the activation arrives; returns the
  /// seconds spent waiting.
  double recv_activation(int mb);
  /// Runs the module on micro-batch mb: on stage 0 on `input` (moved to the
  /// stage's device), elsewhere on the received activation. Returns the output.
  Tensor forward_micro_batch(int mb, const Tensor& input = {});
  void send_activation(int mb);  ///< Sends micro-batch mb's output to the next stage (asynchronously).
  /// Receives micro-batch mb's output gradient from the next stage; returns the seconds blocked.
  double recv_grad(int mb);
  /// Backward of micro-batch mb: from `loss` on the last stage, from the
  /// received output gradient elsewhere. Frees the micro-batch's activations.
  void backward_micro_batch(int mb, const Tensor& loss = {});
  void send_grad(int mb);  ///< Sends micro-batch mb's input gradient to the previous stage (asynchronously).
  /// Waits for every send posted so far; returns the seconds spent waiting.
  double wait_for_sends();
  /// Forgets every micro-batch's saved tensors (after an evaluation pass).
  void clear();

  /// Micro-batches forwarded and not yet backwarded, now and at most since
  /// reset_peak().
  int live_activations() const { return live_; }
  int peak_live_activations() const {
    return peak_live_;
  }  ///< The most micro-batches alive at once since reset_peak().
  void reset_peak() { peak_live_ = live_; }  ///< Restarts the peak from the current count.

  // --- one micro-batch, no schedule ---
  /// One micro-batch through this stage: receive (after stage 0), forward, send (before the last); returns the output.
  Tensor forward(const Tensor& input = {});
  /// Its backward: from `loss` on the last stage, else from the received gradient; sends the input gradient on.
  void backward(const Tensor& loss = {});

 private:
  struct MicroBatch {
    Tensor input;  ///< received activation (a leaf that collects its gradient), or stage 0's input
    Tensor output;  ///< the module's output (with its graph) until backward
    Tensor output_grad;
  };
  MicroBatch& state(int mb);
  double wait(const WorkHandle& work);
  /// The parts of exchange(): each returns the op that moves its data (a
  /// receive's tensor allocated on the transport device); arrived() stores a
  /// received tensor where its step says.
  P2POp post_activation(int mb);
  P2POp post_grad(int mb);
  std::pair<P2POp, double> expect_activation(int mb);
  P2POp expect_grad(int mb);
  void arrived(const Step& step, const Tensor& wire);

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  StageOptions options_;
  Device transport_;
  int stage_, num_stages_;
  std::map<int, MicroBatch> micro_batches_;
  std::vector<std::pair<WorkHandle, std::vector<Tensor>>> pending_sends_;  ///< keep tensors alive until sent
  int live_ = 0, peak_live_ = 0;
};

/// Tags of the point-to-point messages of micro-batch mb (kept below Gloo's 2^24).
int activation_header_tag(int mb);
int activation_tag(int mb);  ///< The tag of micro-batch mb's activation.
int grad_tag(int mb);  ///< The tag of micro-batch mb's gradient.

}  // namespace anvil::distributed::pipeline
