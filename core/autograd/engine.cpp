// The backward engine: counts how many gradients each node waits for, then
// runs nodes whose inputs are complete, latest-created first (so a node runs
// only after every consumer of its outputs has contributed).
#include "core/autograd/engine.h"

#include <queue>
#include <unordered_map>
#include <unordered_set>

#include <cmath>

#include "core/autocast.h"
#include "core/autograd/anomaly_mode.h"
#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"

namespace anvil::autograd {

namespace {

struct ByLatest {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr < b->sequence_nr; }
};

// Gradients for one invocation: where they go and what to capture.
struct GraphTask {
  bool keep_graph = false;
  bool accumulate = true;  // false for grad(): leaves' .grad stay untouched
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::unordered_map<Node*, std::shared_ptr<Node>> alive;  // keeps nodes alive while queued
  // grad(): (node, output_nr) -> index into captured.
  std::map<std::pair<Node*, uint32_t>, size_t> captures;
  std::vector<Tensor> captured;
};

void add_into(std::vector<Tensor>& buffer, uint32_t slot, const Tensor& g) {
  if (slot >= buffer.size()) buffer.resize(slot + 1);
  buffer[slot] = buffer[slot].defined() ? buffer[slot] + g : g;
}

// Anomaly mode: fails at the first node whose backward returned a non-finite
// gradient, naming it (its inputs' gradients were checked when they were made).
void check_finite_outputs(const Node& node, const std::vector<Tensor>& outputs) {
  NoGradGuard no_grad;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& g = outputs[i];
    if (!g.defined() || !is_floating(g.dtype()) || g.numel() == 0) continue;
    // x * 0 is 0 for every finite x and NaN for NaN or inf: one reduction.
    if (std::isfinite((g * 0).sum().item<double>())) continue;
    const bool has_nan = std::isnan(g.abs().sum().item<double>());
    fail("autograd anomaly detection: the backward of '", node.name(), "' (node #", node.sequence_nr,
         ", created by the forward op of that name) returned ", has_nan ? "NaN" : "inf",
         " values in its gradient for input ", i, " (", detail::describe(g),
         "); the gradients it received were finite");
  }
}

void count_dependencies(GraphTask& task, const std::vector<std::shared_ptr<Node>>& roots) {
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (auto& r : roots) {
    task.alive[r.get()] = r;
    if (seen.insert(r.get()).second) stack.push_back(r.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      task.dependencies[e.node.get()] += 1;
      if (seen.insert(e.node.get()).second) {
        task.alive[e.node.get()] = e.node;
        stack.push_back(e.node.get());
      }
    }
  }
}

void run(GraphTask& task, const std::vector<Edge>& root_edges, const std::vector<Tensor>& root_grads,
         bool create_graph) {
  // Each node differentiates in the dtypes its forward used, whatever autocast
  // scope the backward is called from (as PyTorch's engine).
  autocast::Suspended no_autocast;
  std::vector<std::shared_ptr<Node>> roots;
  for (size_t i = 0; i < root_edges.size(); ++i) {
    roots.push_back(root_edges[i].node);
    auto& buf = task.buffers[root_edges[i].node.get()];
    buf.resize(root_edges[i].node->num_outputs);
    add_into(buf, root_edges[i].input_nr, root_grads[i]);
  }
  count_dependencies(task, roots);
  if (is_anomaly_enabled())
    for (size_t i = 0; i < root_grads.size(); ++i) {
      NoGradGuard no_grad;
      const Tensor& g = root_grads[i];
      ANVIL_CHECK(
          !g.defined() || !is_floating(g.dtype()) || g.numel() == 0 || std::isfinite((g * 0).sum().item<double>()),
          "autograd anomaly detection: the gradient given to backward for output ", i, " holds NaN or inf (",
          detail::describe(g), ")");
    }

  std::priority_queue<Node*, std::vector<Node*>, ByLatest> ready;
  std::unordered_set<Node*> queued;
  for (auto& r : roots)
    if (task.dependencies[r.get()] == 0 && queued.insert(r.get()).second) ready.push(r.get());

  EnableGradGuard grad_mode(create_graph);
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(task.buffers[node]);
    grads.resize(node->num_outputs);
    for (auto& [slot, hooks] : node->pre_hooks) {
      if (slot >= grads.size() || !grads[slot].defined()) continue;
      for (auto& hook : hooks) {
        Tensor replaced = hook(grads[slot]);
        if (replaced.defined()) grads[slot] = replaced;
      }
    }
    for (uint32_t slot = 0; slot < grads.size(); ++slot) {
      auto it = task.captures.find({node, slot});
      if (it != task.captures.end() && grads[slot].defined()) task.captured[it->second] = grads[slot];
    }

    bool is_leaf_sink = dynamic_cast<AccumulateGrad*>(node) != nullptr;
    std::vector<Tensor> outputs;
    if (!is_leaf_sink || task.accumulate) {
      bool any = false;
      for (auto& g : grads) any = any || g.defined();
      if (any) outputs = node->apply(std::move(grads));
      if (any && is_anomaly_enabled()) check_finite_outputs(*node, outputs);
      if (!task.keep_graph) node->release_saved();
    }

    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid()) continue;
      Node* next = e.node.get();
      if (i < outputs.size() && outputs[i].defined()) {
        auto& buf = task.buffers[next];
        if (buf.size() < next->num_outputs) buf.resize(next->num_outputs);
        add_into(buf, e.input_nr, outputs[i]);
      }
      if (--task.dependencies[next] == 0 && queued.insert(next).second) ready.push(next);
    }
  }
}

// Callbacks queued by queue_callback() during the backward pass running on
// this thread; saved and restored so a hook that runs its own backward gets
// its own list.
thread_local std::vector<std::function<void()>>* queued_callbacks = nullptr;

// Runs the graph, then the callbacks queued while it ran.
void run_with_callbacks(GraphTask& task, const std::vector<Edge>& root_edges, const std::vector<Tensor>& root_grads,
                        bool create_graph) {
  std::vector<std::function<void()>> callbacks;
  struct Scope {
    std::vector<std::function<void()>>* previous;
    explicit Scope(std::vector<std::function<void()>>* mine) : previous(queued_callbacks) { queued_callbacks = mine; }
    ~Scope() { queued_callbacks = previous; }
  } scope(&callbacks);
  run(task, root_edges, root_grads, create_graph);
  // By index: a callback may queue another (which reallocates the vector).
  for (size_t i = 0; i < callbacks.size(); ++i) {
    std::function<void()> fn = std::move(callbacks[i]);
    fn();
  }
}

// The gradient each root starts from: ones for a scalar, else must be given.
std::vector<Tensor> initial_grads(const char* api, const std::vector<Tensor>& roots, const std::vector<Tensor>& given) {
  ANVIL_CHECK(given.empty() || given.size() == roots.size(), api, ": got ", given.size(), " gradients for ",
              roots.size(), " outputs");
  std::vector<Tensor> grads;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    ANVIL_CHECK(r.requires_grad(), api, ": output ", i, " (", detail::describe(r),
                ") does not require grad and has no grad_fn; did you call it under NoGradGuard or on a detached "
                "tensor?");
    if (!given.empty() && given[i].defined()) {
      ANVIL_CHECK(given[i].shape() == r.shape(), api, ": gradient of shape ", given[i].shape_str(),
                  " does not match output of shape ", r.shape_str());
      grads.push_back(given[i]);
    } else {
      ANVIL_CHECK(r.numel() == 1, api, ": gradient can be implicitly created only for scalar outputs, got shape ",
                  r.shape_str(), "; pass a gradient tensor");
      grads.push_back(ones(r.shape(), r.options()));
    }
  }
  return grads;
}

}  // namespace

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grad_roots, const BackwardOptions& options) {
  std::vector<Tensor> grads = initial_grads("backward", roots, grad_roots);
  std::vector<Edge> edges;
  for (const Tensor& r : roots) edges.push_back(gradient_edge(r));
  GraphTask task;
  task.keep_graph = options.retain_graph || options.create_graph;
  run_with_callbacks(task, edges, grads, options.create_graph);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, const BackwardOptions& options, bool allow_unused) {
  std::vector<Tensor> grads = initial_grads("grad", outputs, grad_outputs);
  std::vector<Edge> edges;
  for (const Tensor& r : outputs) edges.push_back(gradient_edge(r));
  GraphTask task;
  task.keep_graph = options.retain_graph || options.create_graph;
  task.accumulate = false;
  task.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    ANVIL_CHECK(inputs[i].requires_grad(), "grad: input ", i, " (", detail::describe(inputs[i]),
                ") does not require grad");
    Edge e = gradient_edge(inputs[i]);
    task.captures[{e.node.get(), e.input_nr}] = i;
  }
  run_with_callbacks(task, edges, grads, options.create_graph);
  for (size_t i = 0; i < inputs.size(); ++i)
    ANVIL_CHECK(allow_unused || task.captured[i].defined(), "grad: input ", i, " (", detail::describe(inputs[i]),
                ") was not used to compute the outputs; pass allow_unused=true to get an undefined gradient");
  return task.captured;
}

void queue_callback(std::function<void()> fn) {
  ANVIL_CHECK(queued_callbacks != nullptr,
              "autograd::queue_callback: called outside a backward pass (call it from a hook or a node while "
              "backward() runs)");
  ANVIL_CHECK(fn != nullptr, "autograd::queue_callback: got an empty function");
  queued_callbacks->push_back(std::move(fn));
}

bool in_backward_pass() { return queued_callbacks != nullptr; }

}  // namespace anvil::autograd
