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

/// An input of a node's backward: which node receives that gradient, and as which of its outputs.
struct Edge {
  std::shared_ptr<Node> node;  ///< null: the input needs no gradient
  uint32_t input_nr = 0;  ///< which of node's outputs this edge feeds
  bool valid() const { return node != nullptr; }  ///< Whether a gradient flows along this edge.
};

/// A node of the autograd graph: the backward of one recorded op.
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  /// grads[i] is the gradient w.r.t. output i (undefined if none arrived).
  /// Returns one gradient per next edge (undefined where none).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  virtual std::string name() const = 0;  ///< The forward op's name, as errors and grad_fn()->name() show it.
  /// Drops saved tensors once backward ran without retain_graph.
  virtual void release_saved() {}

  std::vector<Edge> next_edges;  ///< where each input's gradient goes, one edge per input
  uint32_t num_outputs = 1;  ///< number of forward outputs (gradients apply receives)
  uint64_t sequence_nr;  ///< creation order: later nodes run first when both are ready
  std::map<uint32_t, std::vector<TensorHook>> pre_hooks;  ///< per output: tensor hooks of non-leaf tensors
};

/// A node whose backward is a function written with anvil ops.
class FunctionNode : public Node {
 public:
  /// The backward: the output's gradient to one gradient per input.
  using Backward = std::function<std::vector<Tensor>(const Tensor& grad)>;
  /// A node named `name` running `backward`.
  FunctionNode(std::string name, Backward backward)
      : name_(std::move(name)), backward_(std::make_shared<const Backward>(std::move(backward))) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return name_; }  ///< The op's name.
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
  explicit AccumulateGrad(Tensor leaf) : leaf_(std::move(leaf)) {}  ///< The accumulator of `leaf`.
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }  ///< "AccumulateGrad".
  const Tensor& leaf() const { return leaf_; }  ///< The leaf it accumulates into.

 private:
  Tensor leaf_;
};

/// A tensor's autograd state, created the first time it takes part in autograd.
struct AutogradMeta {
  bool requires_grad = false;  ///< whether ops record history for this tensor
  bool retains_grad = false;  ///< keep grad for this non-leaf tensor (retain_grad())
  bool is_view = false;  ///< a view of a tensor that has history: in-place changes are refused
  Tensor grad;  ///< the accumulated gradient of a leaf (or a retaining non-leaf)
  std::shared_ptr<Node> grad_fn;  ///< null for leaves
  uint32_t output_nr = 0;  ///< which of grad_fn's outputs this tensor is
  std::weak_ptr<AccumulateGrad> grad_accumulator;  ///< the leaf's AccumulateGrad node, while the graph holds it
  std::vector<TensorHook> hooks;  ///< leaf hooks (non-leaf hooks live on grad_fn)
  std::vector<PostAccumulateHook>
      post_accumulate_hooks;  ///< hooks run after the gradient was accumulated (leaves only)
};

/// The FunctionNode whose backward is running on this thread (null outside).
std::shared_ptr<Node> current_backward_node();

AutogradMeta& meta(const Tensor& t);  ///< creates it on first use
AutogradMeta* meta_if(const Tensor& t);  ///< null when the tensor never took part in autograd
/// The edge a gradient for t flows into: grad_fn, or the leaf's accumulator.
Edge gradient_edge(const Tensor& t);

}  // namespace anvil::autograd
