#pragma once
/// @file
/// ZeRO stages 1 and 2: AdamW whose optimizer state (stage 1) and gradients
/// (stage 2) are sharded across the data-parallel ranks (Rajbhandari et al.,
/// "ZeRO", 2020). Plain data parallelism keeps two moments per parameter on
/// every rank; here each rank keeps them only for its 1/N slice of the
/// flattened parameters, so state memory per rank drops to ~1/N. Stage 3
/// (parameters sharded too) is FullyShardedDataParallel (fsdp/fsdp.h).
///
/// The parameters are packed, in reverse order (the order backward produces
/// their gradients), into buckets of about bucket_cap_bytes; each bucket is
/// flattened, padded to a multiple of N and cut into N equal slices
/// (FlatShardLayout); rank r owns slice r of every bucket.
///
/// One step():
///
///     1. stage 1: the local gradients are flattened and reduce-scattered with
///        averaging: rank r receives the mean gradient of its slices only.
///        Stage 2 did this during backward: a post-accumulate hook copies each
///        gradient into its bucket and releases it; a complete bucket is
///        reduce-scattered at once, overlapping the rest of backward, and the
///        mean slice is added to this rank's gradient shard at the end of
///        backward. So after backward a rank holds 1/N of the gradients, and
///        several backward passes accumulate into the shards;
///     2. rank r runs the ordinary AdamW update (nn::optim::AdamW, the backend's
///        multi-tensor kernel) on its slice of the parameters;
///     3. the updated slices are all-gathered into every rank's parameters.
/// The result is the same as AdamW over the averaged gradients on one process.
///
/// Use it with the plain model, not with DistributedDataParallel: step()
/// averages the gradients itself (through DDP they would be averaged twice,
/// which is correct but wastes a full all-reduce).
///
///     distributed::ZeroAdamW opt(model->parameters(), group, {.lr = 1e-3}, {.stage = 2});
///     for (...) { opt.zero_grad(); loss.backward(); opt.clip_grad_norm_(1.0); opt.step(); }
///
/// Stage 2: the parameters' .grad() are empty after backward (their values
/// live in the shards); clip with clip_grad_norm_ here, not nn's; step()
/// consumes the gradient shards (the next backward starts from zero).
///
/// Limits: one parameter group; every parameter on one device with one dtype;
/// a parameter without a gradient on this rank counts as a zero gradient (the
/// ranks cannot skip it independently and stay in step). state_dict() holds the
/// hyper-parameters only; shard_state_dict() holds this rank's moments.
#include <cstdint>
#include <memory>
#include <vector>

#include "distributed/process_group/process_group.h"
#include "distributed/zero/flat_shard.h"
#include "nn/optim/adam.h"

namespace anvil::distributed {

/// ZeroAdamW's settings.
struct ZeroOptions {
  int stage = 1;  ///< 1: optimizer state sharded; 2: gradients too
  int64_t bucket_cap_bytes = 25 * 1024 * 1024;  ///< a bucket closes once it holds this many bytes of parameters
};

/// AdamW with its state (stage 1) and its gradients (stage 2) sharded across the data-parallel ranks (see the file
/// comment).
class ZeroAdamW : public nn::optim::OptimizerWith<nn::optim::AdamWOptions> {
 public:
  /// Broadcasts rank 0's parameters so every rank starts from the same values.
  ZeroAdamW(std::vector<Tensor> params, std::shared_ptr<ProcessGroup> group, nn::optim::AdamWOptions options = {},
            ZeroOptions zero = {});
  ~ZeroAdamW() override;

  void step() override;
  /// Stage 2: scales the gradient shards so that the global 2-norm of the
  /// (mean) gradient is at most max_norm; returns that norm. Collective.
  double clip_grad_norm_(double max_norm);

  /// Bytes of gradients this rank holds now: full .grad() of the parameters,
  /// unreduced bucket buffers and the gradient shards.
  int64_t gradient_bytes() const;
  size_t num_buckets() const;  ///< Number of buckets the parameters were packed into.

  /// Bytes of optimizer state (the two moments) this rank holds, and what an
  /// unsharded AdamW would hold on every rank.
  int64_t optimizer_state_bytes() const;
  int64_t unsharded_optimizer_state_bytes() const;  ///< Bytes the unsharded optimizer state would take on one rank.

  /// Elements of the parameters this rank updates (its slice of every bucket).
  int64_t shard_size() const;
  int64_t total_numel() const;  ///< Elements of all the parameters, without padding.
  /// The AdamW state of this rank's slices (step count, exp_avg, exp_avg_sq).
  nn::optim::OptimizerState shard_state_dict() const;

  class Buckets;  // the bucket state the gradient hooks share

 private:
  std::shared_ptr<ProcessGroup> group_;
  ZeroOptions zero_;
  std::shared_ptr<Buckets> buckets_;
  std::unique_ptr<nn::optim::AdamW> shard_optimizer_;
};

}  // namespace anvil::distributed
