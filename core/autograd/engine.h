#pragma once
/// @file
/// The autograd engine's entry points: backward over several roots, grad() without touching .grad(), and callbacks at
/// the end of a backward pass.
#include <functional>
#include <vector>

#include "core/tensor.h"

namespace anvil::autograd {

/// How a backward pass treats its graph.
struct BackwardOptions {
  bool retain_graph = false;  ///< keep the graph (and its saved tensors) for another backward
  bool create_graph = false;  ///< record the backward pass itself (higher-order gradients)
};

/// Accumulates d(roots)/d(leaf) into every reachable leaf's .grad().
/// grad_roots may be empty for scalar roots (gradient 1).
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
              const BackwardOptions& options = {});

/// Returns d(outputs)/d(inputs) without touching any .grad(). With
/// allow_unused, inputs the outputs do not depend on get an undefined tensor.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, const BackwardOptions& options = {},
                         bool allow_unused = false);

/// Queues `fn` to run once the backward pass running on this thread has
/// finished walking its graph (every leaf gradient accumulated), before
/// backward() / grad() returns; callbacks run in the order queued, and one may
/// queue another. What DDP uses to wait for its last bucket's all-reduce and
/// write the averaged gradients back. Only valid inside a backward pass (from
/// a hook or a node); an exception from a callback propagates out of backward.
void queue_callback(std::function<void()> fn);
/// True while this thread runs a backward pass (where queue_callback works).
bool in_backward_pass();

}  // namespace anvil::autograd
