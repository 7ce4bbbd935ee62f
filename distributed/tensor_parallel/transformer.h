#pragma once
// Megatron-LM's parallel transformer layer, from the building blocks of
// layers.h: attention with its heads split across the tensor-parallel ranks
// and the MLP with its hidden units split, each with one all-reduce forward
// and one backward (two per block each way).
//
//   auto block = ParallelTransformerBlock::from_full(full_block, tp);   // nn::TransformerBlock
//   Tensor y = block->forward(x);  // x, y [B, T, C], the same on every rank of tp
//
// ParallelSelfAttention: qkv is a ColumnParallelLinear holding q, k and v
// for this rank's n_head / n heads; proj a RowParallelLinear over those
// heads' outputs. ParallelMLP: Linear(C, 4C) column-parallel, GELU,
// Linear(4C, C) row-parallel. LayerNorms and residuals are replicated.
//
// With sequence_parallel, x and y are this rank's slice of the sequence
// ([B, T/n, C]): the LayerNorms and residual adds run on T/n steps, the
// column layers all-gather the sequence and the row layers reduce-scatter
// it (the same bytes as the two all-reduces). Call
// all_reduce_sequence_parallel_grads(block->sequence_parallel_parameters(), tp)
// after backward.
//
// Dropout must be 0: a dropout mask on a replicated activation has to be
// the same on every tensor-parallel rank, and one on a split activation
// different, which takes Megatron's per-region RNG tracker (not here yet).
#include <memory>
#include <vector>

#include "distributed/tensor_parallel/layers.h"
#include "nn/layers/layernorm.h"
#include "nn/layers/transformer.h"

namespace anvil::distributed::tensor_parallel {

struct ParallelOptions {
  bool sequence_parallel = false;
  int64_t sequence_dim = 1;  // of [B, T, C]
};

class ParallelSelfAttention : public nn::Module {
 public:
  ParallelSelfAttention(const nn::TransformerOptions& options, GroupPtr group, const ParallelOptions& parallel = {});
  // This rank's heads of full's qkv (their q, k and v rows) and proj (their columns).
  static std::shared_ptr<ParallelSelfAttention> from_full(const nn::CausalSelfAttention& full, GroupPtr group,
                                                          const ParallelOptions& parallel = {});
  // Copies this rank's slices of full's weights in (from_full's second half).
  void load_from_full(const nn::CausalSelfAttention& full);
  Tensor forward(const Tensor& x) override;

  nn::TransformerOptions options;
  int64_t heads_per_rank;
  GroupPtr group;
  std::shared_ptr<ColumnParallelLinear> qkv;
  std::shared_ptr<RowParallelLinear> proj;
};

class ParallelMLP : public nn::Module {
 public:
  ParallelMLP(int64_t n_embd, int64_t hidden, bool bias, GroupPtr group, const ParallelOptions& parallel = {});
  // From an nn::TransformerBlock's mlp (Linear, GELU, Linear, Dropout).
  static std::shared_ptr<ParallelMLP> from_full(const nn::Sequential& full, GroupPtr group,
                                                const ParallelOptions& parallel = {});
  void load_from_full(const nn::Sequential& full);
  Tensor forward(const Tensor& x) override;

  GroupPtr group;
  std::shared_ptr<ColumnParallelLinear> fc;
  std::shared_ptr<RowParallelLinear> proj;
};

class ParallelTransformerBlock : public nn::Module {
 public:
  ParallelTransformerBlock(const nn::TransformerOptions& options, GroupPtr group, const ParallelOptions& parallel = {});
  static std::shared_ptr<ParallelTransformerBlock> from_full(const nn::TransformerBlock& full, GroupPtr group,
                                                             const ParallelOptions& parallel = {});
  Tensor forward(const Tensor& x) override;
  // Replicated parameters that see only this rank's sequence slice under
  // sequence parallelism: LayerNorm weights and biases, row-parallel biases.
  std::vector<Tensor> sequence_parallel_parameters() const;

  nn::TransformerOptions options;
  ParallelOptions parallel;
  std::shared_ptr<nn::LayerNorm> ln1, ln2;
  std::shared_ptr<ParallelSelfAttention> attn;
  std::shared_ptr<ParallelMLP> mlp;
};

}  // namespace anvil::distributed::tensor_parallel
