#pragma once
// Cross-entropy over logits whose vocabulary is split across the
// tensor-parallel ranks (a ColumnParallelLinear head without gather_output),
// as Megatron-LM's vocab_parallel_cross_entropy: the full logits are never
// gathered. Per token, each rank sends three floats' worth of all-reduces
// (the max for a stable softmax, the sum of exponentials, the target's
// logit, each found on the rank that owns it) instead of V/n logits.
//
//   Tensor logits = head->forward(h);                       // [B, T, V/n] on each rank
//   Tensor loss = vocab_parallel_cross_entropy(logits, targets, tp);  // targets [B, T], ids in [0, V)
//   loss.backward();  // d logits = softmax - one_hot, this rank's columns
//
// The loss equals nn::functional::cross_entropy on the gathered logits (the
// same on every rank), and so do the gradients, column slice by slice.
#include "core/ops/nn_ops.h"
#include "distributed/tensor_parallel/mappings.h"

namespace anvil::distributed::tensor_parallel {

struct VocabParallelCrossEntropyOptions {
  Reduction reduction = Reduction::Mean;  // None: one loss per target
};

// logits [..., V/n] (this rank's slice of the vocabulary, in group-rank
// order), targets int64 [...] with ids in [0, V).
Tensor vocab_parallel_cross_entropy(const Tensor& logits, const Tensor& targets, const GroupPtr& group,
                                    const VocabParallelCrossEntropyOptions& options = {});

}  // namespace anvil::distributed::tensor_parallel
