#include "core/autograd/node.h"

#include <atomic>
#include <mutex>

#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/ops/elementwise.h"

namespace anvil::autograd {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
thread_local std::shared_ptr<Node> running_node;
// Backward may run on several threads over graphs that share leaves: one
// lock orders the accumulations into .grad() (recursive: a hook may itself
// run a backward), another the lazy creation of a leaf's accumulator.
std::recursive_mutex accumulate_mutex;
std::mutex accumulator_creation_mutex;

struct RunningNode {
  std::shared_ptr<Node> previous;
  explicit RunningNode(std::shared_ptr<Node> n) : previous(std::move(running_node)) { running_node = std::move(n); }
  ~RunningNode() { running_node = std::move(previous); }
};
}  // namespace

std::shared_ptr<Node> current_backward_node() { return running_node; }

Node::Node() : sequence_nr(next_sequence_nr.fetch_add(1)) {}

std::vector<Tensor> FunctionNode::apply(std::vector<Tensor>&& grads) {
  std::shared_ptr<const Backward> backward;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    backward = backward_;
  }
  ANVIL_CHECK(backward != nullptr, "backward: trying to backward through the graph a second time (node ", name_,
              "); its saved tensors were freed after the first backward. Pass retain_graph=true to the "
              "first backward to keep them.");
  RunningNode running(shared_from_this());
  return (*backward)(grads.at(0));
}

void FunctionNode::release_saved() {
  std::shared_ptr<const Backward> released;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    released = std::move(backward_);
  }
  // Destroyed here, outside the lock, unless a pass on another thread still
  // holds it (then its saved tensors go when that call returns).
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor g = std::move(grads.at(0));
  if (!g.defined()) return {};
  std::lock_guard<std::recursive_mutex> lock(accumulate_mutex);
  AutogradMeta& m = meta(leaf_);
  for (auto& hook : m.hooks) {
    Tensor replaced = hook(g);
    if (replaced.defined()) g = replaced;
  }
  if (!m.grad.defined()) {
    // Own the gradient: it may be a broadcast view or alias a buffer that is
    // reused, and optimizers update .grad in place. Stealing needs both this
    // handle to be the only one on its impl (the caller's gradient tensor, or
    // another leaf's buffer, may hold the same impl) and the impl to be the
    // only one on its storage.
    bool owned = g.impl_ptr().use_count() == 1 && g.is_contiguous() && g.storage().use_count() == 1 &&
                 g.numel() * g.itemsize() == g.storage()->nbytes;
    m.grad = GradMode::is_enabled() ? (owned ? g : g.clone()) : (owned ? g.detach() : g.detach().clone());
  } else if (GradMode::is_enabled()) {
    m.grad = m.grad + g;  // create_graph: keep the history of the accumulation
  } else {
    m.grad.add_(g);
  }
  for (auto& hook : m.post_accumulate_hooks) hook(leaf_);
  return {};
}

AutogradMeta& meta(const Tensor& t) {
  ANVIL_CHECK(t.defined(), "autograd: used an undefined tensor");
  auto& slot = t.impl()->autograd;
  if (!slot) slot = std::make_unique<AutogradMeta>();
  return *slot;
}

AutogradMeta* meta_if(const Tensor& t) { return t.defined() ? t.impl()->autograd.get() : nullptr; }

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = meta_if(t);
  if (!m || !m->requires_grad) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  std::lock_guard<std::mutex> lock(accumulator_creation_mutex);
  auto acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m->grad_accumulator = acc;
  }
  return {acc, 0};
}

}  // namespace anvil::autograd
