#pragma once
// Megatron-LM's tensor-parallel layers: each rank of a tensor-parallel group
// holds a slice of the weight and computes a slice of the result; the
// mappings (mappings.h) move activations and gradients between them.
//
//   ColumnParallelLinear   weight [out/n, in]: y_r = x W_r^T (+ b_r), the r-th
//                          slice of y's last dim; gather_output all-gathers it.
//   RowParallelLinear      weight [out, in/n]: y = sum_r x_r W_r^T (+ b), the
//                          partial products all-reduced; input_is_parallel
//                          takes x_r as it is (a column-parallel layer's output).
//   VocabParallelEmbedding weight [V/n, D]: rank r looks up the ids in its
//                          rows, zeros elsewhere; the lookups all-reduced.
//
//   auto fc = ColumnParallelLinear::from_full(full_fc, tp);     // slices the full layer
//   auto out = RowParallelLinear::from_full(full_out, tp, {.input_is_parallel = true});
//   Tensor y = out->forward(gelu(fc->forward(x)));             // one all-reduce forward, one backward
//
// from_full slices a single-process layer's weights (the same on every rank),
// so a parallel model starts exactly where the unsplit one does. A layer
// built from sizes draws its slice of the weight with the full layer's
// distribution (each rank its own draws) and zeros its biases, as Megatron
// does; a row-parallel bias is replicated, so zero keeps the ranks agreeing.
//
// Sequence parallel (Megatron-LM v3): the activations outside the
// tensor-parallel region are split along the sequence dimension; a column
// layer all-gathers them (reduce-scatters the gradient) and a row layer
// reduce-scatters its result instead of all-reducing it. Replicated
// parameters used on sequence slices (a row layer's bias, LayerNorm) then
// get partial gradients: all_reduce_sequence_parallel_grads adds them up.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/tensor_parallel/mappings.h"
#include "nn/layers/embedding.h"
#include "nn/layers/linear.h"
#include "nn/module.h"

namespace anvil::distributed::tensor_parallel {

struct ColumnParallelOptions {
  bool bias = true;
  // All-gather the output slices into the full [..., out] on every rank.
  bool gather_output = false;
  // Input split along sequence_dim: all-gathered before the matmul.
  bool sequence_parallel = false;
  int64_t sequence_dim = 1;
};

class ColumnParallelLinear : public nn::Module {
 public:
  ColumnParallelLinear(int64_t in_features, int64_t out_features, GroupPtr group,
                       const ColumnParallelOptions& options = {});
  // Rows [r * out/n, (r+1) * out/n) of full's weight and bias.
  static std::shared_ptr<ColumnParallelLinear> from_full(const nn::Linear& full, GroupPtr group,
                                                         ColumnParallelOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  int64_t in_features, out_features, out_per_rank;
  ColumnParallelOptions options;
  GroupPtr group;
  Tensor weight, bias;  // [out/n, in], [out/n]
};

struct RowParallelOptions {
  bool bias = true;
  // The input is already this rank's slice of the last dim; otherwise it is
  // the full input and the layer takes its slice.
  bool input_is_parallel = false;
  // Reduce-scatter the result along sequence_dim instead of all-reducing it.
  bool sequence_parallel = false;
  int64_t sequence_dim = 1;
};

class RowParallelLinear : public nn::Module {
 public:
  RowParallelLinear(int64_t in_features, int64_t out_features, GroupPtr group, const RowParallelOptions& options = {});
  // Columns [r * in/n, (r+1) * in/n) of full's weight; the whole bias.
  static std::shared_ptr<RowParallelLinear> from_full(const nn::Linear& full, GroupPtr group,
                                                      RowParallelOptions options = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  int64_t in_features, out_features, in_per_rank;
  RowParallelOptions options;
  GroupPtr group;
  Tensor weight, bias;  // [out, in/n], [out] (replicated)
};

class VocabParallelEmbedding : public nn::Module {
 public:
  VocabParallelEmbedding(int64_t num_embeddings, int64_t embedding_dim, GroupPtr group);
  // Rows [r * V/n, (r+1) * V/n) of full's weight.
  static std::shared_ptr<VocabParallelEmbedding> from_full(const nn::Embedding& full, GroupPtr group);
  // int64 ids of any shape in [0, num_embeddings) -> [..., embedding_dim] on every rank.
  Tensor forward(const Tensor& ids) override;
  std::string extra_repr() const override;

  int64_t num_embeddings, embedding_dim, vocab_start, vocab_per_rank;
  GroupPtr group;
  Tensor weight;  // [V/n, D]
};

// The rows [rank * size / n, ...) of dim 0 or 1 of a full parameter, as a
// copy; `layer` names the caller when `size` does not divide by the group.
Tensor shard_of(const Tensor& full, int64_t dim, ProcessGroup& group, const std::string& layer);

// Adds up, across the tensor-parallel group, the gradients of replicated
// parameters that see only this rank's sequence slice under sequence
// parallelism (LayerNorm weights, row-parallel biases): call after backward,
// before the optimizer step. Parameters without a gradient are skipped.
void all_reduce_sequence_parallel_grads(const std::vector<Tensor>& parameters, ProcessGroup& group);

}  // namespace anvil::distributed::tensor_parallel
