#include "distributed/tensor_parallel/transformer.h"

#include <string>
#include <utility>

#include "core/autograd/grad_mode.h"
#include "core/base/error.h"
#include "core/ops.h"

namespace anvil::distributed::tensor_parallel {

namespace {

void check_no_dropout(const char* layer, double dropout) {
  ANVIL_CHECK(dropout == 0.0, layer, ": dropout ", dropout,
              " is not supported under tensor parallelism yet (the ranks' masks would have to agree on replicated "
              "activations); use dropout 0");
}

void copy_param(Tensor& to, const Tensor& from) {
  if (!to.defined()) return;
  NoGradGuard no_grad;
  to.copy_(from.detach());
}

std::shared_ptr<nn::Linear> linear_at(const nn::Sequential& seq, size_t i, const char* what) {
  auto linear = std::dynamic_pointer_cast<nn::Linear>(seq[i]);
  ANVIL_CHECK(linear != nullptr, what, ": expected a Linear at position ", i, " of the MLP");
  return linear;
}

}  // namespace

ParallelSelfAttention::ParallelSelfAttention(const nn::TransformerOptions& o, GroupPtr tp,
                                             const ParallelOptions& parallel)
    : Module("ParallelSelfAttention"), options(o), group(std::move(tp)) {
  ANVIL_CHECK(group != nullptr, "ParallelSelfAttention: no tensor-parallel group");
  check_no_dropout("ParallelSelfAttention", o.dropout);
  ANVIL_CHECK(o.n_head > 0 && o.n_embd % o.n_head == 0 && o.n_head % group->size() == 0,
              "ParallelSelfAttention: n_head ", o.n_head, " does not divide by the tensor-parallel size ",
              group->size(), " (n_embd ", o.n_embd, ")");
  heads_per_rank = o.n_head / group->size();
  qkv = register_module("qkv", std::make_shared<ColumnParallelLinear>(
                                   o.n_embd, 3 * o.n_embd, group,
                                   ColumnParallelOptions{.bias = o.bias,
                                                         .sequence_parallel = parallel.sequence_parallel,
                                                         .sequence_dim = parallel.sequence_dim}));
  proj = register_module(
      "proj", std::make_shared<RowParallelLinear>(o.n_embd, o.n_embd, group,
                                                  RowParallelOptions{.bias = o.bias,
                                                                     .input_is_parallel = true,
                                                                     .sequence_parallel = parallel.sequence_parallel,
                                                                     .sequence_dim = parallel.sequence_dim}));
}

std::shared_ptr<ParallelSelfAttention> ParallelSelfAttention::from_full(const nn::CausalSelfAttention& full,
                                                                        GroupPtr group,
                                                                        const ParallelOptions& parallel) {
  auto attn = std::make_shared<ParallelSelfAttention>(full.options, std::move(group), parallel);
  attn->to(full.qkv->weight.device(), full.qkv->weight.dtype());
  attn->load_from_full(full);
  return attn;
}

void ParallelSelfAttention::load_from_full(const nn::CausalSelfAttention& full) {
  ANVIL_CHECK(full.options.n_embd == options.n_embd && full.options.n_head == options.n_head,
              "ParallelSelfAttention::load_from_full: n_embd/n_head ", full.options.n_embd, "/", full.options.n_head,
              " differ from this layer's ", options.n_embd, "/", options.n_head);
  // full's qkv rows are [q; k; v], each C rows, head after head: this rank's
  // heads are the same slice of each third.
  auto my_rows = [&](const Tensor& t) {
    std::vector<Tensor> thirds;
    for (const Tensor& third : chunk(t.detach(), 3, 0))
      thirds.push_back(shard_of(third, 0, *group, "ParallelSelfAttention"));
    return cat(thirds, 0);
  };
  copy_param(qkv->weight, my_rows(full.qkv->weight));
  if (full.qkv->bias.defined()) copy_param(qkv->bias, my_rows(full.qkv->bias));
  copy_param(proj->weight, shard_of(full.proj->weight, 1, *group, "ParallelSelfAttention"));
  if (full.proj->bias.defined()) copy_param(proj->bias, full.proj->bias);
}

Tensor ParallelSelfAttention::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined() && x.dim() == 3 && x.size(2) == options.n_embd,
              "ParallelSelfAttention: expected input [B, T, ", options.n_embd, "], got ",
              x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  const int64_t head_dim = options.n_embd / options.n_head;
  Tensor local = qkv->forward(x);  // [B, T, 3 * C/n]: all T steps, also under sequence parallelism
  const int64_t batch = local.size(0), steps = local.size(1);
  std::vector<Tensor> parts = chunk(local, 3, -1);
  for (Tensor& p : parts) p = p.reshape({batch, steps, heads_per_rank, head_dim}).transpose(1, 2);
  AttentionOptions a;
  a.is_causal = true;
  Tensor y = scaled_dot_product_attention(parts[0], parts[1], parts[2], a);
  return proj->forward(y.transpose(1, 2).reshape({batch, steps, heads_per_rank * head_dim}));
}

ParallelMLP::ParallelMLP(int64_t n_embd, int64_t hidden, bool bias, GroupPtr tp, const ParallelOptions& parallel)
    : Module("ParallelMLP"), group(std::move(tp)) {
  fc = register_module("fc", std::make_shared<ColumnParallelLinear>(
                                 n_embd, hidden, group,
                                 ColumnParallelOptions{.bias = bias,
                                                       .sequence_parallel = parallel.sequence_parallel,
                                                       .sequence_dim = parallel.sequence_dim}));
  proj = register_module(
      "proj", std::make_shared<RowParallelLinear>(hidden, n_embd, group,
                                                  RowParallelOptions{.bias = bias,
                                                                     .input_is_parallel = true,
                                                                     .sequence_parallel = parallel.sequence_parallel,
                                                                     .sequence_dim = parallel.sequence_dim}));
}

std::shared_ptr<ParallelMLP> ParallelMLP::from_full(const nn::Sequential& full, GroupPtr group,
                                                    const ParallelOptions& parallel) {
  auto full_fc = linear_at(full, 0, "ParallelMLP::from_full");
  auto mlp = std::make_shared<ParallelMLP>(full_fc->in_features, full_fc->out_features, full_fc->bias.defined(),
                                           std::move(group), parallel);
  mlp->to(full_fc->weight.device(), full_fc->weight.dtype());
  mlp->load_from_full(full);
  return mlp;
}

void ParallelMLP::load_from_full(const nn::Sequential& full) {
  auto full_fc = linear_at(full, 0, "ParallelMLP::load_from_full");
  auto full_proj = linear_at(full, 2, "ParallelMLP::load_from_full");
  copy_param(fc->weight, shard_of(full_fc->weight, 0, *group, "ParallelMLP"));
  if (full_fc->bias.defined()) copy_param(fc->bias, shard_of(full_fc->bias, 0, *group, "ParallelMLP"));
  copy_param(proj->weight, shard_of(full_proj->weight, 1, *group, "ParallelMLP"));
  if (full_proj->bias.defined()) copy_param(proj->bias, full_proj->bias);
}

Tensor ParallelMLP::forward(const Tensor& x) { return proj->forward(gelu(fc->forward(x), GeluApprox::Tanh)); }

ParallelTransformerBlock::ParallelTransformerBlock(const nn::TransformerOptions& o, GroupPtr group,
                                                   const ParallelOptions& p)
    : Module("ParallelTransformerBlock"), options(o), parallel(p) {
  check_no_dropout("ParallelTransformerBlock", o.dropout);
  const nn::LayerNormOptions ln{.normalized_shape = {o.n_embd}, .bias = o.bias};
  ln1 = register_module("ln1", std::make_shared<nn::LayerNorm>(ln));
  attn = register_module("attn", std::make_shared<ParallelSelfAttention>(o, group, p));
  ln2 = register_module("ln2", std::make_shared<nn::LayerNorm>(ln));
  mlp = register_module("mlp", std::make_shared<ParallelMLP>(o.n_embd, o.mlp_ratio * o.n_embd, o.bias, group, p));
}

std::shared_ptr<ParallelTransformerBlock> ParallelTransformerBlock::from_full(const nn::TransformerBlock& full,
                                                                              GroupPtr group,
                                                                              const ParallelOptions& parallel) {
  auto block = std::make_shared<ParallelTransformerBlock>(full.options, std::move(group), parallel);
  block->to(full.ln1->weight.device(), full.ln1->weight.dtype());
  copy_param(block->ln1->weight, full.ln1->weight);
  copy_param(block->ln1->bias, full.ln1->bias);
  copy_param(block->ln2->weight, full.ln2->weight);
  copy_param(block->ln2->bias, full.ln2->bias);
  block->attn->load_from_full(*full.attn);
  block->mlp->load_from_full(*full.mlp);
  return block;
}

Tensor ParallelTransformerBlock::forward(const Tensor& x) {
  Tensor h = x + attn->forward(ln1->forward(x));
  return h + mlp->forward(ln2->forward(h));
}

std::vector<Tensor> ParallelTransformerBlock::sequence_parallel_parameters() const {
  std::vector<Tensor> params;
  for (const Tensor& p : {ln1->weight, ln1->bias, ln2->weight, ln2->bias, attn->proj->bias, mlp->proj->bias})
    if (p.defined()) params.push_back(p);
  return params;
}

}  // namespace anvil::distributed::tensor_parallel
