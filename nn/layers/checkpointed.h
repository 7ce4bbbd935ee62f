#pragma once
/// @file
/// Checkpointed: activation checkpointing for a module or block. Its forward
/// runs the wrapped module without keeping intermediate activations, and runs
/// it again during backward to get them back: less memory, one more forward.
/// Gradients (to the input and to the module's parameters) are the same as
/// without it; dropout inside replays the same mask.
///
///     for (int i = 0; i < n_layer; ++i)
///       blocks->push_back(std::make_shared<nn::Checkpointed>(std::make_shared<nn::TransformerBlock>(opts)));
///
/// The wrapped module is the child "module", so its keys gain that prefix
/// ("0.module.ln1.weight"). A BatchNorm inside updates its running statistics
/// twice per step (forward and recomputation), as with PyTorch's checkpoint.
#include <memory>

#include "nn/module.h"

namespace anvil::nn {

/// Runs its module with activation checkpointing (see the file comment).
class Checkpointed : public Module {
 public:
  explicit Checkpointed(std::shared_ptr<Module> module);  ///< Wraps `module`, which becomes the child "module".
  Tensor forward(const Tensor& x) override;
  /// Several inputs (undefined ones pass through as absent), checkpointed as one.
  Tensor forward_inputs(const std::vector<Tensor>& inputs) override;

  std::shared_ptr<Module> module;  ///< the wrapped module
};

}  // namespace anvil::nn
