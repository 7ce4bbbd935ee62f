#pragma once
// The samples' Gpt (models.h) split across a tensor-parallel group, as
// Megatron-LM splits GPT: the token embedding by vocabulary rows, each
// block's attention by heads and MLP by hidden units, the head by
// vocabulary columns, and the loss computed on those columns without
// gathering the logits. Position embedding and LayerNorms are replicated.
//
//   auto full = std::make_shared<Gpt>(options);            // the same seed on every rank
//   TensorParallelGpt tp_gpt(*full, tp_group);             // this rank's slices of it
//   Tensor loss = tp_gpt.loss(tokens, targets);            // equals language_model_loss(full->forward(tokens),
//   targets) loss.backward(); tp_gpt.finish_gradients();                             // sequence parallel: adds up the
//   replicated ones
//
// The vocabulary must divide by the tensor-parallel size (pad it, as
// Megatron's --make-vocab-size-divisible-by), and dropout must be 0.
// Data parallel on top: the same model on each "dp" row of a 2-D mesh, its
// gradients averaged over the "dp" group after backward.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "distributed/tensor_parallel/cross_entropy.h"
#include "distributed/tensor_parallel/transformer.h"
#include "samples/models.h"

namespace anvil::samples {

// The tensor-parallel GPT's token + position embeddings as one module, the
// first layer of its Sequential form (as_sequential, for pipeline stages).
class TensorParallelGptEmbedding : public nn::Module {
 public:
  TensorParallelGptEmbedding(std::shared_ptr<distributed::tensor_parallel::VocabParallelEmbedding> tok,
                             std::shared_ptr<nn::Embedding> pos,
                             const distributed::tensor_parallel::ParallelOptions& parallel)
      : nn::Module("TensorParallelGptEmbedding"), parallel_(parallel) {
    tok_ = register_module("tok", std::move(tok));
    pos_ = register_module("pos", std::move(pos));
  }
  Tensor forward(const Tensor& tokens) override {
    Tensor positions = arange(tokens.size(1), TensorOptions(kInt64).device(tokens.device()));
    Tensor x = tok_->forward(tokens) + pos_->forward(positions);
    if (!parallel_.sequence_parallel) return x;
    return distributed::tensor_parallel::scatter_to_sequence_parallel_region(x, parallel_.sequence_dim, tok_->group);
  }

 private:
  std::shared_ptr<distributed::tensor_parallel::VocabParallelEmbedding> tok_;
  std::shared_ptr<nn::Embedding> pos_;
  distributed::tensor_parallel::ParallelOptions parallel_;
};

class TensorParallelGpt : public nn::Module {
 public:
  TensorParallelGpt(const Gpt& full, std::shared_ptr<distributed::ProcessGroup> tp,
                    const distributed::tensor_parallel::ParallelOptions& parallel = {})
      : nn::Module("TensorParallelGpt"), group_(std::move(tp)), parallel_(parallel), block_size_(full.options().block) {
    namespace tpar = distributed::tensor_parallel;
    tok = register_module("tok", tpar::VocabParallelEmbedding::from_full(*full.tok, group_));
    pos = register_module("pos", std::make_shared<nn::Embedding>(full.pos->num_embeddings, full.pos->embedding_dim));
    copy_parameters(*pos, *full.pos);
    blocks = register_module("blocks", std::make_shared<nn::ModuleList>());
    for (auto& child : full.blocks->children())
      blocks->push_back(
          tpar::ParallelTransformerBlock::from_full(dynamic_cast<nn::TransformerBlock&>(*child), group_, parallel));
    ln = register_module("ln", std::make_shared<nn::LayerNorm>(full.ln->options));
    copy_parameters(*ln, *full.ln);
    head = register_module(
        "head", tpar::ColumnParallelLinear::from_full(
                    *full.head, group_,
                    {.sequence_parallel = parallel.sequence_parallel, .sequence_dim = parallel.sequence_dim}));
  }

  // tokens [B, T] -> this rank's slice of the logits [B, T, vocab / n].
  Tensor forward(const Tensor& tokens) override {
    const int64_t t = tokens.size(1);
    ANVIL_CHECK(t <= block_size_, "TensorParallelGpt: sequence of ", t, " tokens is longer than the block size ",
                block_size_);
    Tensor x = TensorParallelGptEmbedding(tok, pos, parallel_).forward(tokens);
    for (auto& block : blocks->children()) x = block->forward(x);
    return head->forward(ln->forward(x));
  }

  // forward as a Sequential of the same modules, [embeddings, block 0 ..
  // block L-1, final LayerNorm, head], to cut into pipeline stages (3-D
  // parallelism: each stage's layers split over its tensor-parallel group).
  // Its output is this rank's logit slice: the pipeline's loss is
  // loss_of_logits.
  std::shared_ptr<nn::Sequential> as_sequential() const {
    auto seq = std::make_shared<nn::Sequential>();
    seq->push_back(std::make_shared<TensorParallelGptEmbedding>(tok, pos, parallel_));
    for (auto& block : blocks->children()) seq->push_back(block);
    seq->push_back(ln);
    seq->push_back(head);
    return seq;
  }

  // The loss of this rank's logit slice (the last pipeline stage's output).
  Tensor loss_of_logits(const Tensor& logits, const Tensor& targets) const {
    return distributed::tensor_parallel::vocab_parallel_cross_entropy(logits.to(kFloat32), targets, group_);
  }

  // The mean next-token loss over every position, the same on every rank.
  Tensor loss(const Tensor& tokens, const Tensor& targets) { return loss_of_logits(forward(tokens), targets); }

  // After backward: under sequence parallelism each rank holds a share of
  // the replicated LayerNorm and row-bias gradients; this adds them up.
  void finish_gradients() {
    if (!parallel_.sequence_parallel) return;
    std::vector<Tensor> shared = replicated_parameters();
    shared.erase(shared.begin());  // the position embedding is added before the sequence is split: whole gradients
    distributed::tensor_parallel::all_reduce_sequence_parallel_grads(shared, *group_);
  }

  // Parameters every rank of the group holds whole (position embedding,
  // LayerNorms, row-parallel biases); the others are slices. A global
  // gradient norm counts these once, not once per rank.
  std::vector<Tensor> replicated_parameters() const {
    std::vector<Tensor> params{pos->weight, ln->weight, ln->bias};
    for (auto& child : blocks->children()) {
      auto& block = dynamic_cast<distributed::tensor_parallel::ParallelTransformerBlock&>(*child);
      for (const Tensor& p : block.sequence_parallel_parameters()) params.push_back(p);
    }
    return params;
  }

  // The sum of squares of `params`' gradients (some or all of this model's
  // parameters: a pipeline stage's) over the tensor-parallel group, each
  // replicated parameter counted once; the same on every rank of the group.
  double grad_norm_squared(const std::vector<Tensor>& params) const {
    std::vector<const TensorImpl*> replicated;
    for (const Tensor& p : replicated_parameters()) replicated.push_back(p.impl());
    Tensor sq = zeros({1}, kFloat64);
    for (const Tensor& p : params) {
      if (!p.grad().defined()) continue;
      const bool whole = std::find(replicated.begin(), replicated.end(), p.impl()) != replicated.end();
      Tensor s = p.grad().to(kFloat64).square().sum().cpu().reshape({1});
      sq += whole ? s / static_cast<double>(group_->size()) : s;
    }
    group_->all_reduce(sq)->wait();
    return sq.item<double>();
  }

  // The whole model's gradient norm (every rank gets the same value).
  double grad_norm() const { return std::sqrt(grad_norm_squared(parameters())); }

  std::shared_ptr<distributed::tensor_parallel::VocabParallelEmbedding> tok;
  std::shared_ptr<nn::Embedding> pos;
  std::shared_ptr<nn::ModuleList> blocks;
  std::shared_ptr<nn::LayerNorm> ln;
  std::shared_ptr<distributed::tensor_parallel::ColumnParallelLinear> head;

 private:
  // A replicated layer starts as the full model's (same shape, dtype, device).
  static void copy_parameters(nn::Module& to, const nn::Module& from) {
    auto src = from.parameters();
    auto dst = to.parameters();
    if (src.empty()) return;
    to.to(src[0].device(), src[0].dtype());
    NoGradGuard no_grad;
    for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i].detach());
  }

  std::shared_ptr<distributed::ProcessGroup> group_;
  distributed::tensor_parallel::ParallelOptions parallel_;
  int64_t block_size_;
};

}  // namespace anvil::samples
