#pragma once
/// @file
/// One FSDP unit: the parameters of one wrapped submodule (a layer), kept as
/// this rank's slice of their flattened values (the "flat parameter" shard),
/// and gathered into full parameters only while the layer computes.
///
/// At rest the module's parameters are empty tensors and the gathered buffer
/// holds no memory. gather() re-fills the buffer's storage in place (an
/// all-gather of every rank's shard) and points the parameters back at their
/// views of it. The storage object itself is kept, so tensors autograd saved
/// during forward (the parameters, or views of them) see the values again
/// when backward re-gathers: PyTorch's FSDP frees and re-fills storage the
/// same way.
///
/// Gradients: a post-accumulate hook marks each parameter's gradient ready;
/// once all are, start_grad_reduce() flattens them, releases them, and
/// reduce-scatters the flat gradient; finish_grad_reduce() adds this rank's
/// mean slice to the shard's .grad() (so backward passes accumulate, as plain
/// .grad() does).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/process_group/process_group.h"
#include "distributed/zero/flat_shard.h"
#include "nn/module.h"

namespace anvil::distributed {

/// One FSDP unit: a module whose parameters live as this rank's slice of one flat buffer, gathered while it computes
/// (see the file comment).
class FsdpUnit {
 public:
  /// Takes module's parameters over: from here on they are views of the
  /// gathered buffer (in compute_dtype) and, at rest, empty. The values come
  /// from the module as it is (the caller broadcasts rank 0's first).
  FsdpUnit(std::string name, std::shared_ptr<nn::Module> module, ProcessGroup& group, DType compute_dtype);

  const std::string& name() const { return name_; }  ///< The unit's name in the model ("0", "blocks.3", ...).
  nn::Module& module() const { return *module_; }  ///< The module it shards.
  /// This rank's slice of the flat parameters in the module's own dtype: the
  /// master weights the optimizer updates (a leaf that requires grad).
  const Tensor& shard() const { return shard_; }
  const FlatShardLayout& layout() const { return layout_; }  ///< How the flat buffer maps to the unit's parameters.
  /// The parameters' names within the unit.
  const std::vector<std::string>& param_names() const { return param_names_; }
  /// The module's parameter handles, in param_names() order.
  const std::vector<Tensor>& params() const { return params_; }

  /// Starts the all-gather (async); nothing when the parameters are already
  /// gathered from the current shard values or a gather is in flight.
  void start_gather();
  /// Waits for the gather (starting it if needed): the parameters hold the
  /// full values.
  void wait_gather();
  void free_full_params();  ///< gives the gathered memory back
  bool is_gathered() const { return gathered_; }  ///< Whether the full parameters are gathered now.

  /// Gradients of one backward pass.
  void mark_grad_ready(size_t param_index);
  /// Whether some parameter's gradient has arrived this backward.
  bool any_grad_ready() const { return ready_count_ > 0; }
  /// Whether every parameter's gradient has arrived.
  bool all_grads_ready() const { return ready_count_ == params_.size(); }
  void start_grad_reduce();  ///< a parameter without a gradient counts as zeros
  bool grad_reduce_pending() const { return grad_flat_.defined(); }  ///< Whether a reduce-scatter is in flight.
  void finish_grad_reduce();  ///< Waits for the reduce-scatter and adds this rank's slice to the shard's .grad().

  /// Bytes this unit holds beyond its shard right now: the gathered
  /// parameters, and full-size gradients not yet reduced.
  int64_t gathered_bytes() const;
  int64_t full_grad_bytes() const;  ///< Bytes of the unreduced full gradients held now.
  int64_t full_param_bytes() const;  ///< the gathered buffer's size when held

  /// The full parameters in the master dtype (collective; for state dicts),
  /// one tensor per parameter, detached copies.
  std::vector<Tensor> gather_master_params() const;

 private:
  void point_params_at_gathered();

  std::string name_;
  std::shared_ptr<nn::Module> module_;
  ProcessGroup& group_;
  DType compute_dtype_;
  std::vector<Tensor> params_;  ///< the module's handles (their data is swapped)
  std::vector<std::string> param_names_;
  FlatShardLayout layout_;
  Tensor shard_;
  Tensor full_flat_;  ///< compute dtype, padded; storage released at rest
  uint64_t full_flat_version_ = 0;
  Tensor gather_input_;  ///< the shard in compute dtype, alive while gathering
  WorkHandle gather_work_;
  bool gathered_ = false;
  uint64_t gathered_shard_version_ = 0, gathering_shard_version_ = 0;

  std::vector<bool> ready_;
  size_t ready_count_ = 0;
  Tensor grad_flat_, grad_slice_;
  WorkHandle reduce_work_;
};

}  // namespace anvil::distributed
