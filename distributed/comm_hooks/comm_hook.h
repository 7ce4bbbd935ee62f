#pragma once
/// @file
/// Communication hooks: how DistributedDataParallel turns one rank's bucket of
/// gradients into the average over the ranks, after PyTorch's
/// DistributedDataParallel.register_comm_hook.
///
/// A hook gets a GradBucket and returns a BucketFuture at once; DDP calls the
/// hook when the bucket is complete (during backward, buckets in index order on
/// every rank) and, at the end of backward, waits on the futures in the same
/// order and writes each result -- the averaged flat gradients -- into the
/// parameters' .grad(). The hook starts its first collective(s) before it
/// returns, so they overlap the rest of backward; work that must follow a
/// collective (decompressing, a second round as in PowerSGD) goes in the
/// future's continuation, which runs inside wait() on the thread that finishes
/// backward. Since every rank waits on its buckets in index order, collectives
/// started by continuations are issued in the same order on every rank.
///
///     ddp->register_comm_hook([](GradBucket& bucket) {
///       auto work = bucket.process_group().all_reduce(bucket.buffer(), ReduceOp::Sum);
///       return BucketFuture::after(work, [&bucket] { return bucket.buffer().div_(bucket.world_size()); });
///     });
///
/// Hooks must issue the same collectives on every rank, in the same order.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "distributed/process_group/process_group.h"

namespace anvil::distributed {

/// One bucket of one backward pass, as a hook sees it. The buffer holds this
/// rank's gradients of the bucket's parameters back to back (flat, in the
/// bucket's order); the hook may overwrite it. Valid until the hook's future
/// has been waited on.
class GradBucket {
 public:
  /// A bucket as DDP hands it to a hook.
  GradBucket(size_t index, bool is_last, Tensor buffer, std::vector<Tensor> parameters, std::vector<std::string> names,
             std::vector<int64_t> offsets, ProcessGroup& group)
      : index_(index),
        is_last_(is_last),
        buffer_(std::move(buffer)),
        parameters_(std::move(parameters)),
        names_(std::move(names)),
        offsets_(std::move(offsets)),
        group_(group) {}

  /// 0 is the first bucket reduced in a step (the last parameters registered).
  size_t index() const { return index_; }
  /// The last bucket of this step: per-step state (iteration counters) advances here.
  bool is_last() const { return is_last_; }
  Tensor& buffer() { return buffer_; }  ///< The flat gradients, for a hook to reduce in place.
  const Tensor& buffer() const { return buffer_; }  ///< The flat gradients.
  const std::vector<Tensor>& parameters() const { return parameters_; }  ///< The bucket's parameters, in bucket order.
  const std::vector<std::string>& parameter_names() const { return names_; }  ///< Their names.
  /// Where parameter i's gradient starts in the buffer (elements).
  const std::vector<int64_t>& offsets() const { return offsets_; }
  /// Parameter i's gradient: a view of the buffer with the parameter's shape.
  Tensor gradient(size_t i) const;
  std::vector<Tensor> gradients() const;  ///< Each parameter's gradient, views of buffer().

  /// DDP's group. Collectives issued through it are counted in DDP's
  /// comm_stats() (bytes per step); a hook using another group is not counted.
  ProcessGroup& process_group() const { return group_; }
  int world_size() const { return group_.size(); }  ///< Ranks in the group.

 private:
  size_t index_;
  bool is_last_;
  Tensor buffer_;
  std::vector<Tensor> parameters_;
  std::vector<std::string> names_;
  std::vector<int64_t> offsets_;
  ProcessGroup& group_;
};

/// What a hook returns: the averaged bucket, once wait() returns.
class BucketFuture {
 public:
  virtual ~BucketFuture() = default;
  /// Blocks until the bucket is reduced; returns a flat tensor with the
  /// bucket buffer's numel, dtype and device (often the buffer itself).
  /// Rethrows a failed collective's error. Called once.
  virtual Tensor wait() = 0;

  /// A future that waits for `work` and then returns `then()`.
  static std::shared_ptr<BucketFuture> after(WorkHandle work, std::function<Tensor()> then);
  /// A future already holding its result (a hook that computed it synchronously).
  static std::shared_ptr<BucketFuture> ready(Tensor result);
};
using BucketFutureHandle = std::shared_ptr<BucketFuture>;  ///< A reduction in flight, shared by DDP and the hook.

/// A communication hook: the bucket to a future of its reduced flat gradients.
using CommHook = std::function<BucketFutureHandle(GradBucket&)>;

/// PyTorch's default: sum over the ranks, divided by the world size. DDP runs
/// it when no hook is registered.
BucketFutureHandle allreduce_hook(GradBucket& bucket);

}  // namespace anvil::distributed
