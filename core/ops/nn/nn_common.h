#pragma once
// Helpers shared by the nn op front-ends (core/ops/nn/*.cpp). Internal: not
// part of the public API.
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/tensor.h"
#include "kernels/view.h"

namespace anvil::nn_detail {

using Grads = std::vector<Tensor>;

// A kernel's optional argument: the tensor's view, or null when undefined.
// The View lives in `slot`, which must outlive the kernel call.
inline const View* optional_view(const Tensor& t, View& slot) {
  if (!t.defined()) return nullptr;
  slot = t.view_of();
  return &slot;
}

// Backward passes that call fused kernels have no recorded graph of their own.
// Under create_graph (grad mode on inside a backward) that would silently give
// wrong higher-order gradients, so they refuse instead.
inline void refuse_double_backward(const char* op) {
  if (autograd::GradMode::is_enabled())
    fail(op,
         ": double backward (create_graph=true through this op) is not supported; compute its gradient "
         "without create_graph, or express the op with differentiable elementwise/reduce ops");
}

// Checks class-index targets on the host where that is free (CPU tensors):
// every target is in [0, classes) or equals ignore_index.
void check_class_targets(const char* op, const Tensor& targets, int64_t classes, int64_t ignore_index);

}  // namespace anvil::nn_detail
