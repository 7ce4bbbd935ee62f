#pragma once
#include <vector>

#include "core/tensor.h"

namespace anvil::autograd {

struct BackwardOptions {
  bool retain_graph = false;
  bool create_graph = false;  // record the backward pass itself (higher-order gradients)
};

// Accumulates d(roots)/d(leaf) into every reachable leaf's .grad().
// grad_roots may be empty for scalar roots (gradient 1).
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots,
              const BackwardOptions& options = {});

// Returns d(outputs)/d(inputs) without touching any .grad(). With
// allow_unused, inputs the outputs do not depend on get an undefined tensor.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, const BackwardOptions& options = {},
                         bool allow_unused = false);

}  // namespace anvil::autograd
