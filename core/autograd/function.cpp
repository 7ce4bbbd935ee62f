#include "core/autograd/function.h"

#include "core/dispatch.h"

namespace anvil::autograd {

bool needs_grad(std::initializer_list<Tensor> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

void record(const char* name, const std::vector<Tensor>& inputs, Tensor& output, FunctionNode::Backward backward) {
  auto node = std::make_shared<FunctionNode>(name, std::move(backward));
  node->next_edges.reserve(inputs.size());
  for (const Tensor& t : inputs) node->next_edges.push_back(t.defined() ? gradient_edge(t) : Edge{});
  AutogradMeta& m = meta(output);
  m.requires_grad = true;
  m.grad_fn = std::move(node);
  m.output_nr = 0;
}

SavedTensor::SavedTensor(const Tensor& t, const char* op)
    : data_(t), version_(t.defined() ? t.version() : 0), op_(op) {}

SavedTensor SavedTensor::output(const Tensor& t, const char* op) {
  SavedTensor s;
  s.data_ = t.detach();  // no history: the node would otherwise own itself
  s.version_ = t.version();
  s.op_ = op;
  s.is_output_ = true;
  return s;
}

Tensor SavedTensor::get() const {
  if (!data_.defined()) return data_;
  ANVIL_CHECK(data_.version() == version_, "backward of ", op_, ": a tensor of shape ", data_.shape_str(),
              " saved for the gradient was modified in place afterwards (version ", version_, " when saved, now ",
              data_.version(), "). Clone it before changing it in place, or don't modify it.");
  if (!is_output_ || !GradMode::is_enabled()) return data_;
  // Under create_graph the saved output must carry its history again: it is
  // output 0 of the node now running its backward (the node that saved it).
  std::shared_ptr<Node> producer = current_backward_node();
  if (!producer) return data_;
  Tensor t = data_.detach();
  AutogradMeta& m = meta(t);
  m.requires_grad = true;
  m.grad_fn = std::move(producer);
  m.output_nr = 0;
  return t;
}

void check_inplace(const char* op, const Tensor& self) {
  if (!GradMode::is_enabled()) return;
  AutogradMeta* m = meta_if(self);
  if (!m) return;
  ANVIL_CHECK(!(m->requires_grad && m->grad_fn == nullptr), op, ": a leaf tensor that requires grad (",
              detail::describe(self),
              ") cannot be modified in place; wrap the update in NoGradGuard or use an "
              "out-of-place op");
  ANVIL_CHECK(!m->is_view, op, ": in-place change of a view of a tensor with autograd history is not supported (",
              detail::describe(self), "); use the out-of-place op");
}

void rebase_history(const char* op, Tensor& self, const Tensor& result) {
  check_inplace(op, self);
  // A view made from a tensor without history (check_inplace refuses views of
  // tensors with history): only the view would take the new history, and the
  // viewed tensor, changed in memory, would give no gradient to `result`'s
  // inputs. PyTorch rewrites the base's history (CopySlices); we refuse.
  AutogradMeta* rm = meta_if(result);
  ANVIL_CHECK(!(self.impl()->is_view && rm && rm->requires_grad), op, ": in-place write into a view (",
              detail::describe(self),
              ") of a tensor without autograd history, from an operand that requires "
              "grad, is not supported: the viewed tensor would not record it and its gradient would be wrong. "
              "Build the tensor out of place (cat, stack, where, index_add) or apply the op to the whole tensor");
  {
    NoGradGuard no_grad;
    runtime_for(self.device()).copy(self.view_of(), result.view_of());
  }
  self.bump_version();
  if (rm && rm->requires_grad) {
    AutogradMeta& m = meta(self);
    m.requires_grad = true;
    m.grad_fn = rm->grad_fn;
    m.output_nr = rm->output_nr;
  } else if (AutogradMeta* m = meta_if(self)) {
    // The new values do not depend on anything that needs grad (copy_ of a
    // constant): like fill_, self becomes a constant without history.
    m->grad_fn = nullptr;
    m->requires_grad = false;
  }
}

}  // namespace anvil::autograd
