#pragma once
/// @file
/// Gradient (activation) checkpointing: run `fn` without keeping its
/// intermediate tensors, and run it again during backward to get them back.
/// Trades compute for memory. Random ops inside fn replay the same numbers
/// (the generator state is restored for the recomputation).
///
/// Gradients flow to `inputs` and to any tensor fn captures (e.g. weights),
/// exactly as without checkpointing.
#include <functional>
#include <vector>

#include "core/tensor.h"

namespace anvil::autograd {

/// The checkpointed function: inputs to one output tensor.
using CheckpointFn = std::function<Tensor(const std::vector<Tensor>&)>;
/// fn(inputs), keeping only the inputs for backward and running fn again there (see the file comment).
Tensor checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs);

}  // namespace anvil::autograd
