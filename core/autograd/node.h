#pragma once
/// @file
/// The autograd graph. Every op that records history creates a Node whose
/// next_edges point at the nodes that produced its inputs (or at the
/// AccumulateGrad node of a leaf). The engine walks it in dependency order.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace anvil::autograd {

class Node;

struct Edge {
  std::shared_ptr<Node> node;  ///< null: the input needs no gradient
  uint32_t input_nr = 0;  ///< which of node's outputs this edge feeds
  bool valid() const { return node != nullptr; }
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  /// grads[i] is the gradient w.r.t. output i (undefined if none arrived).
  /// Returns one gradient per next edge (undefined where none).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  virtual std::string name() const = 0;
  /// Drops saved tensors once backward ran without retain_graph.
  virtual void release_saved() {}

  std::vector<Edge> next_edges;
  uint32_t num_outputs = 1;
  uint64_t sequence_nr;  ///< creation order: later nodes run first when both are ready
  std::map<uint32_t, std::vector<TensorHook>> pre_hooks;  ///< per output: tensor hooks of non-leaf tensors
};

/// A node whose backward is a function written with anvil ops.
class FunctionNode : public Node {
 public:
  using Backward = std::function<std::vector<Tensor>(const Tensor& grad)>;
  FunctionNode(std::string name, Backward backward)
      : name_(std::move(name)), backward_(std::make_shared<const Backward>(std::move(backward))) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return name_; }
  void release_saved() override;

 private:
  std::string name_;
  /// Several threads may walk one graph (backward() on a shared graph): one
  /// releases the function, and what it saved, while another is about to call
  /// it. So a pass takes its own reference under the lock and the function
  /// lives until the last call returns. Null once released.
  std::mutex mutex_;
  std::shared_ptr<const Backward> backward_;
};

/// Sink of a leaf tensor: runs its hooks, adds into .grad(), runs
/// post-accumulate hooks (DDP starts its bucket all-reduce from those).
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(Tensor leaf) : leaf_(std::move(leaf)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
  const Tensor& leaf() const { return leaf_; }

 private:
  Tensor leaf_;
};

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  bool is_view = false;  ///< a view of a tensor that has history: in-place changes are refused
  Tensor grad;
  std::shared_ptr<Node> grad_fn;  ///< null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<AccumulateGrad> grad_accumulator;
  std::vector<TensorHook> hooks;  ///< leaf hooks (non-leaf hooks live on grad_fn)
  std::vector<PostAccumulateHook> post_accumulate_hooks;
};

/// The FunctionNode whose backward is running on this thread (null outside).
std::shared_ptr<Node> current_backward_node();

AutogradMeta& meta(const Tensor& t);  ///< creates it on first use
AutogradMeta* meta_if(const Tensor& t);  ///< null when the tensor never took part in autograd
/// The edge a gradient for t flows into: grad_fn, or the leaf's accumulator.
Edge gradient_edge(const Tensor& t);

}  // namespace anvil::autograd
