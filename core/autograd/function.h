#pragma once
// What an op uses to record its backward:
//
//   Tensor out = ...forward...;
//   if (autograd::needs_grad({a, b}))
//     autograd::record("mul", {a, b}, out,
//         [sa = autograd::SavedTensor(a, "mul"), sb = ...](const Tensor& g) {
//           return std::vector<Tensor>{g * sb.get(), g * sa.get()};
//         });
//
// The backward returns one gradient per input, in order (undefined where the
// input needs none). It is written with anvil ops, so it runs on every device
// and can itself be differentiated (create_graph).
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/autograd/node.h"

namespace anvil::autograd {

// True when grad mode is on and some defined input requires grad.
bool needs_grad(std::initializer_list<Tensor> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

// Makes `output` the result of a new FunctionNode over `inputs`.
void record(const char* name, const std::vector<Tensor>& inputs, Tensor& output, FunctionNode::Backward backward);

// A tensor kept for backward. get() fails with a clear message if the tensor
// was modified in place after it was saved (its version counter moved).
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, const char* op);
  // For an op's own output: keeps the data without a reference cycle, and
  // reattaches the history when unpacked under create_graph.
  static SavedTensor output(const Tensor& t, const char* op);
  Tensor get() const;
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;
  uint64_t version_ = 0;
  const char* op_ = "";
  bool is_output_ = false;
};

// For in-place ops on a tensor with history: `self` takes over `result`'s
// data and history. Refuses leaves that require grad and views of tensors
// with history, with a message naming the op.
void rebase_history(const char* op, Tensor& self, const Tensor& result);
// Throws when an in-place op would modify a leaf requiring grad under grad mode.
void check_inplace(const char* op, const Tensor& self);

}  // namespace anvil::autograd
