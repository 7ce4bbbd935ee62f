#pragma once
/// @file
/// DistributedDataParallel: data parallelism over the ranks of a process group,
/// after torch.nn.parallel.DistributedDataParallel. Every rank holds a full
/// replica, runs forward and backward on its own shard of the batch, and the
/// gradients are averaged over the ranks during backward, so after backward
/// every rank holds the same .grad() -- the gradient of the mean loss over the
/// whole batch -- and the same optimizer step keeps the replicas identical.
///
///     distributed::init_process_group();
///   model->to(device);  // first: buckets are made on the parameters' device
///     auto ddp = std::make_shared<distributed::DistributedDataParallel>(model, distributed::default_group_ptr());
///   optim::AdamW opt(ddp->parameters());
///     for (...) { opt.zero_grad(); loss_fn(ddp->forward(x), y).backward(); opt.step(); }
///
/// How:
/// - At construction rank 0's parameters and buffers are broadcast to all.
/// - Parameters are packed, in reverse registration order (roughly the order
///   backward produces their gradients), into buckets of about
///   bucket_cap_bytes. A post-accumulate-grad hook on each parameter copies
///   its gradient into its bucket; when a bucket is complete its all-reduce
///   starts asynchronously, overlapping the rest of backward. Buckets start in
///   index order on every rank, so the ranks' collectives always match.
/// - A callback queued on the autograd engine runs when backward finishes: it
///   waits for the all-reduces and writes the averages into each .grad().
/// - no_sync() skips the averaging (gradients accumulate locally); the first
///   backward after it averages the accumulated gradients.
/// - A parameter that got no gradient in a synced backward is an error naming
///   it, unless find_unused_parameters, which averages it as a zero gradient.
/// - register_comm_hook replaces the bucket all-reduce with a hook (16-bit or
///   PowerSGD compression, or your own; distributed/comm_hooks/comm_hook.h).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/base/error.h"
#include "distributed/comm_hooks/comm_hook.h"
#include "distributed/process_group/process_group.h"
#include "nn/module.h"

namespace anvil::distributed {

/// DistributedDataParallel's settings, as torch.nn.parallel.DistributedDataParallel's.
struct DDPOptions {
  int64_t bucket_cap_bytes = 25 * 1024 * 1024;  ///< a bucket closes once it holds this many bytes of gradients
  /// The first bucket (the last parameters, whose gradients come first) is
  /// kept small so communication starts early in backward, as PyTorch does
  /// (its default too). Capped at bucket_cap_bytes: a first bucket larger
  /// than the others would start later, not earlier.
  int64_t first_bucket_cap_bytes = 1024 * 1024;
  /// Treat parameters that got no gradient in a backward pass as zero
  /// gradients instead of failing (costs overlap: their buckets wait for the
  /// end of backward).
  bool find_unused_parameters = false;
  /// Broadcast rank 0's buffers (e.g. BatchNorm running statistics) before
  /// every forward, as PyTorch does.
  bool broadcast_buffers = true;
  /// Start each bucket's all-reduce as soon as it is complete (true), or all
  /// of them at the end of backward (false; only to measure what overlap buys).
  bool overlap_communication = true;
};

/// Data parallelism over a process group: each rank a replica, gradients averaged during backward (see the file
/// comment).
class DistributedDataParallel : public nn::Module {
 public:
  /// Wraps `module` (already on its device) over `group`; broadcasts rank 0's parameters and buffers, so every rank
  /// must construct it.
  DistributedDataParallel(std::shared_ptr<nn::Module> module, std::shared_ptr<ProcessGroup> group,
                          DDPOptions options = {});
  ~DistributedDataParallel() override;

  Tensor forward(const Tensor& x) override;
  /// A module with several inputs (nn::Module::forward_inputs).
  Tensor forward_inputs(const std::vector<Tensor>& inputs) override;

  nn::Module& module() const { return *module_; }  ///< The wrapped module.
  const std::shared_ptr<nn::Module>& module_ptr() const { return module_; }  ///< The wrapped module's shared pointer.
  ProcessGroup& process_group() const { return *group_; }  ///< The group gradients are averaged over.
  const DDPOptions& options() const { return options_; }  ///< The settings it was made with.

  /// While a guard lives, backward passes through forwards run under it do not
  /// average gradients; they accumulate locally in .grad().
  class NoSyncGuard {
   public:
    /// Turns gradient synchronisation off on `ddp` until destroyed.
    explicit NoSyncGuard(DistributedDataParallel& ddp);
    ~NoSyncGuard();
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  /// No averaging for the scope of the returned guard: gradients accumulate locally, as PyTorch's no_sync().
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  /// Waits for the all-reduces and writes the averaged gradients back. Runs on
  /// its own at the end of every synced backward; call it yourself only when
  /// gradients were produced without the engine's backward (a no-op then if
  /// nothing is pending).
  void finish_gradient_synchronization();

  /// The buckets: parameter names per bucket, in all-reduce order.
  std::vector<std::vector<std::string>> bucket_parameter_names() const;

  /// Replaces how each bucket is averaged (default: allreduce_hook, a sum
  /// all-reduce divided by the world size). Register once, before the first
  /// backward; the hook is called once per bucket per synced backward, buckets
  /// in index order. With one rank nothing is communicated and no hook runs.
  void register_comm_hook(CommHook hook);
  /// PyTorch's form: the state (kept alive by DDP) is passed to every call.
  ///
  ///     ddp->register_comm_hook(std::make_shared<PowerSGDState>(), powersgd_hook);
  template <class State>
  void register_comm_hook(std::shared_ptr<State> state,
                          std::type_identity_t<std::function<BucketFutureHandle(State&, GradBucket&)>> hook) {
    ANVIL_CHECK(state != nullptr, "DistributedDataParallel::register_comm_hook: got a null state");
    register_comm_hook([state, hook](GradBucket& bucket) { return hook(*state, bucket); });
  }

  /// What the buckets sent: the bytes of every tensor this rank handed to a
  /// collective from the bucket path (the hook's all-reduces), per synced
  /// backward. Payload, not wire bytes: a ring all-reduce of B bytes moves
  /// about 2 (n - 1) / n * B per rank whatever the hook. Buffer broadcasts
  /// and the start-up broadcast are not counted.
  struct CommStats {
    int64_t last_step_bytes = 0;  ///< bytes sent by the last synced backward
    int64_t last_step_collectives = 0;  ///< collectives the last synced backward ran
    int64_t total_bytes = 0;  ///< bytes sent in all
    int64_t steps = 0;  ///< synced backward passes
  };
  CommStats comm_stats() const;  ///< What gradient synchronisation has sent so far.

  class Reducer;  // the bucket state the gradient hooks share

 private:
  void before_forward();  ///< buffers broadcast, the reducer armed for this backward

  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  DDPOptions options_;
  std::shared_ptr<Reducer> reducer_;
  bool sync_enabled_ = true;  ///< false inside no_sync()
};

/// Broadcasts root's value of every tensor to all ranks, in order (tensors of
/// equal dtype and device travel in one message).
void broadcast_tensors(ProcessGroup& group, const std::vector<Tensor>& tensors, int root = 0);

}  // namespace anvil::distributed
