#pragma once
// ZeRO stage 1: AdamW whose optimizer state is sharded across the
// data-parallel ranks (Rajbhandari et al., "ZeRO", 2020). Plain data
// parallelism keeps two moments per parameter on every rank; here each rank
// keeps them only for its 1/N slice of the flattened parameters, so state
// memory per rank drops to ~1/N.
//
// One step():
//   1. the local gradients are flattened (padded to a multiple of N) and
//      reduce-scattered with averaging: rank r receives the mean gradient of
//      its slice only;
//   2. rank r runs the ordinary AdamW update (nn::optim::AdamW, the backend's
//      multi-tensor kernel) on its slice of the parameters;
//   3. the updated slices are all-gathered into every rank's parameters.
// The result is the same as AdamW over the averaged gradients on one process.
//
// Use it with the plain model, not with DistributedDataParallel: step()
// averages the gradients itself (through DDP they would be averaged twice,
// which is correct but wastes a full all-reduce).
//
//   distributed::ZeroAdamW opt(model->parameters(), group, {.lr = 1e-3});
//   for (...) { opt.zero_grad(); loss.backward(); opt.step(); }
//
// Limits: one parameter group; every parameter on one device with one dtype;
// a parameter without a gradient on this rank counts as a zero gradient (the
// ranks cannot skip it independently and stay in step). state_dict() holds the
// hyper-parameters only; shard_state_dict() holds this rank's moments.
#include <cstdint>
#include <memory>
#include <vector>

#include "distributed/flat_shard.h"
#include "distributed/process_group.h"
#include "nn/optim/adam.h"

namespace anvil::distributed {

class ZeroAdamW : public nn::optim::OptimizerWith<nn::optim::AdamWOptions> {
 public:
  // Broadcasts rank 0's parameters so every rank starts from the same values.
  ZeroAdamW(std::vector<Tensor> params, std::shared_ptr<ProcessGroup> group, nn::optim::AdamWOptions options = {});
  ~ZeroAdamW() override;

  void step() override;

  // Bytes of optimizer state (the two moments) this rank holds, and what an
  // unsharded AdamW would hold on every rank.
  int64_t optimizer_state_bytes() const;
  int64_t unsharded_optimizer_state_bytes() const;

  // This rank's slice of the flattened parameters: [shard_begin, shard_begin + shard_size).
  int64_t shard_begin() const { return layout_.shard_begin(group_->rank()); }
  int64_t shard_size() const { return layout_.shard_size(); }
  int64_t total_numel() const { return layout_.total_numel(); }
  // The AdamW state of this rank's slice (step count, exp_avg, exp_avg_sq).
  nn::optim::OptimizerState shard_state_dict() const;

 private:
  std::shared_ptr<ProcessGroup> group_;
  FlatShardLayout layout_;
  Tensor shard_param_;  // this rank's slice of the parameters, the one AdamW updates
  std::unique_ptr<nn::optim::AdamW> shard_optimizer_;
};

}  // namespace anvil::distributed
