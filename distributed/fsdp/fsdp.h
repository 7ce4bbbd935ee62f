#pragma once
/// @file
/// FullyShardedDataParallel: ZeRO stage 3 (and, with ShardGradOp, stage 2)
/// after PyTorch's FSDP. Each rank keeps only its 1/N slice of every layer's
/// parameters, gradients and optimizer state; a layer's full parameters exist
/// only while it computes.
///
///     auto model = std::make_shared<nn::Sequential>(...);     // each child with parameters is a unit
///     auto fsdp = std::make_shared<distributed::FullyShardedDataParallel>(model, group);
///     optim::AdamW opt(fsdp->parameters());                   // the flat shards: state is sharded too
///     for (...) {
///       opt.zero_grad();
///       loss_fn(fsdp->forward(x), y).backward();               // gradients arrive reduce-scattered
///       fsdp->clip_grad_norm_(1.0);                            // the global norm over every shard
///       opt.step();
///     }
///     fsdp->save_full_state_dict("model.safetensors");        // collective; rank 0 writes
///
/// Units: for an nn::Sequential, every child that has parameters (a layer or
/// a block) is one unit with one flat parameter. Any other model marks its
/// units by holding them wrapped in FsdpWrapped (below), as PyTorch users
/// wrap their transformer blocks; every parameter must then lie inside one.
/// Running a unit in forward waits for the unit's all-gather, starts the next
/// unit's (forward_prefetch: the transfer overlaps this unit's compute), runs
/// it, and frees its full parameters (FullShard; the last unit stays, as
/// backward starts with it). A tensor hook on each unit's output runs just
/// before the unit's backward: it gathers the unit again and starts the
/// previous unit's gather (backward_prefetch). When every parameter of a unit
/// has its gradient (post-accumulate hooks), the gradients are flattened,
/// released, and reduce-scattered: this rank's shard .grad() receives the mean
/// over ranks, added to what it held (gradient accumulation is just several
/// backward passes before step()). The full parameters are freed too.
///
/// ShardingStrategy::ShardGradOp is ZeRO-2: full parameters stay gathered
/// between steps (re-gathered when the optimizer changed the shards);
/// gradients and optimizer state are sharded.
///
/// Mixed precision: param_dtype (bf16 or fp16) is the dtype parameters are
/// gathered, computed and reduced in; the shards (the optimizer's master
/// weights) keep the module's dtype, typically float32. forward() casts its
/// input to param_dtype and returns the output in it.
///
/// Limits: a parameter belongs to one unit (no weights tied across units, no
/// nested units); every rank must run the same units in forward and backward; buffers are rank 0's at
/// construction and not synchronised afterwards; every parameter must take
/// part in every backward (one that gets no gradient is reduced as zeros).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distributed/fsdp/fsdp_unit.h"
#include "distributed/process_group/process_group.h"
#include "nn/layers/container.h"
#include "nn/module.h"

namespace anvil::distributed {

/// How much FSDP shards.
enum class ShardingStrategy {
  FullShard,  ///< ZeRO-3: parameters, gradients and optimizer state sharded
  ShardGradOp,  ///< ZeRO-2: gradients and optimizer state sharded, parameters replicated
};

/// FullyShardedDataParallel's settings.
struct FSDPOptions {
  ShardingStrategy sharding_strategy = ShardingStrategy::FullShard;  ///< FullShard (ZeRO-3) or ShardGradOp (ZeRO-2)
  /// Mixed precision: gather, compute and reduce in this dtype; empty = the module's dtype.
  std::optional<DType> param_dtype;
  bool forward_prefetch = true;  ///< gather unit i+1 while unit i computes its forward
  bool backward_prefetch = true;  ///< gather unit i-1 while unit i computes its backward
};

/// Bytes one rank holds for the model, as measured.
struct FSDPMemoryStats {
  int64_t model_param_bytes = 0;  ///< every parameter, unsharded, in the module's dtype
  int64_t sharded_param_bytes = 0;  ///< this rank's shards (master weights)
  int64_t sharded_grad_bytes = 0;  ///< this rank's shard gradients
  int64_t largest_unit_bytes = 0;  ///< one unit's gathered parameters (compute dtype)
  int64_t peak_gathered_param_bytes = 0;  ///< most full parameters held at once
  int64_t peak_full_grad_bytes = 0;  ///< most unreduced full gradients held at once
};

class FullyShardedDataParallel;

/// Marks a unit inside a model that is not a Sequential: hold the layer as
/// FsdpWrapped where the layer would go (its keys gain "module.", as with
/// nn::Checkpointed). Without a FullyShardedDataParallel over the model it just
/// runs the layer. Units are prefetched in the order the model lists them
/// (named_modules: depth first), which should be the order forward runs them.
///
///     blocks->push_back(std::make_shared<distributed::FsdpWrapped>(std::make_shared<Block>(opts)));
class FsdpWrapped : public nn::Module {
 public:
  explicit FsdpWrapped(std::shared_ptr<nn::Module> module);  ///< Marks `module` as one FSDP unit.
  Tensor forward(const Tensor& x) override;
  Tensor forward_inputs(const std::vector<Tensor>& inputs) override;

  std::shared_ptr<nn::Module> module;  ///< the wrapped unit

 private:
  friend class FullyShardedDataParallel;
  FullyShardedDataParallel* owner_ = nullptr;
  size_t unit_index_ = 0;
};

/// ZeRO-3 (or ZeRO-2) data parallelism after PyTorch's FSDP: each rank holds 1/N of every unit's parameters, gradients
/// and optimizer state (see the file comment).
class FullyShardedDataParallel : public nn::Module {
 public:
  /// Broadcasts rank 0's parameters and buffers, then shards: from here on
  /// the model's parameters are empty at rest; use this wrapper's. The model
  /// is an nn::Sequential or holds FsdpWrapped units.
  FullyShardedDataParallel(std::shared_ptr<nn::Module> model, std::shared_ptr<ProcessGroup> group,
                           FSDPOptions options = {});
  ~FullyShardedDataParallel() override;

  Tensor forward(const Tensor& x) override;
  void train(bool on = true) override;

  /// Scales the shard gradients so that the global 2-norm of all gradients (as
  /// if unsharded) is at most max_norm; returns that norm (as torch's
  /// FSDP.clip_grad_norm_: collective, every rank gets the same value).
  double clip_grad_norm_(double max_norm);

  /// Every parameter in full, in the module's dtype, with the model's own
  /// names ("0.weight"), plus its buffers. Collective; with rank0_only the
  /// other ranks get an empty dict.
  nn::StateDict full_state_dict(bool rank0_only = false) const;
  /// Collective: rank 0 writes full_state_dict() as safetensors (the same
  /// file an unsharded model->state_dict() would give).
  void save_full_state_dict(const std::filesystem::path& path) const;
  /// This rank's flat shards ("flat_param_<unit>", 1-D) and, in metadata
  /// terms, the layout is FlatShardLayout over the unit's parameters in
  /// order: what parameters() holds, for per-rank checkpoints.
  nn::StateDict sharded_state_dict() const;
  /// Loads this rank's shards from sharded_state_dict() output.
  void load_sharded_state_dict(const nn::StateDict& state);
  /// The same as one safetensors file per rank: `prefix` + "rank<r>-of-<n>.safetensors",
  /// with the world size and rank in its metadata (a checkpoint of another
  /// world size is refused by name). Not collective.
  std::filesystem::path save_sharded_state_dict(const std::string& prefix) const;
  /// Loads this rank's shards from the file save_sharded_state_dict wrote for `prefix`.
  void load_sharded_state_dict_file(const std::string& prefix);

  FSDPMemoryStats memory_stats() const;  ///< The bytes this rank holds, as measured.
  void reset_peak_memory_stats();  ///< Restarts the peak counters.

  size_t num_units() const { return units_.size(); }  ///< Number of units.
  const FsdpUnit& unit(size_t i) const { return *units_[i]; }  ///< Unit `i`.
  nn::Module& module() const { return *model_; }  ///< The wrapped model.
  const FSDPOptions& options() const { return options_; }  ///< The settings it was made with.

 private:
  friend class FsdpWrapped;
  /// Gathers unit `index`, prefetches the next, runs `compute`, arms the
  /// unit's backward and frees it again.
  Tensor run_unit(size_t index, const std::function<Tensor()>& compute);
  void add_unit(const std::string& name, std::shared_ptr<nn::Module> module);
  void before_unit_backward(size_t index);
  void on_param_grad(size_t unit_index, size_t param_index);
  void finish_backward();
  void ensure_backward_callback();
  void finish_pending_reduces();
  void note_memory();
  bool frees_after_use() const { return options_.sharding_strategy == ShardingStrategy::FullShard; }

  std::shared_ptr<nn::Module> model_;
  std::shared_ptr<nn::Sequential> sequential_;  ///< when the units are its children
  std::shared_ptr<ProcessGroup> group_;
  FSDPOptions options_;
  std::vector<std::unique_ptr<FsdpUnit>> units_;
  std::vector<int> unit_of_child_;  ///< per child of the Sequential: its unit index, or -1
  bool callback_queued_ = false;
  int64_t peak_gathered_ = 0, peak_full_grads_ = 0;
  std::shared_ptr<bool> alive_;  ///< the hooks outlive nothing: they check this first
};

}  // namespace anvil::distributed
