#include "distributed/tensor_parallel/layers.h"

#include <cmath>

#include "core/autograd/grad_mode.h"
#include "core/base/error.h"
#include "core/factory.h"
#include "core/ops.h"
#include "nn/init.h"

namespace anvil::distributed::tensor_parallel {

namespace {

int64_t per_rank(int64_t size, ProcessGroup& group, const std::string& layer, const char* what) {
  ANVIL_CHECK(group.size() > 0 && size % group.size() == 0, layer, ": ", what, " ", size,
              " does not divide by the tensor-parallel size ", group.size(), " (rank ", group.rank(), " of ",
              group.size(), ")");
  return size / group.size();
}

void copy_into(Tensor& param, const Tensor& value) {
  NoGradGuard no_grad;
  param.copy_(value);
}

}  // namespace

Tensor shard_of(const Tensor& full, int64_t dim, ProcessGroup& group, const std::string& layer) {
  const int64_t n = per_rank(full.size(dim), group, layer, dim == 0 ? "dimension 0 of size" : "dimension 1 of size");
  return full.detach().narrow(dim, group.rank() * n, n).contiguous().clone();
}

ColumnParallelLinear::ColumnParallelLinear(int64_t in, int64_t out, GroupPtr g, const ColumnParallelOptions& o)
    : Module("ColumnParallelLinear"), in_features(in), out_features(out), options(o), group(std::move(g)) {
  ANVIL_CHECK(group != nullptr, "ColumnParallelLinear: no tensor-parallel group");
  out_per_rank = per_rank(out, *group, "ColumnParallelLinear", "out_features");
  weight = register_parameter("weight", empty({out_per_rank, in}));
  // kaiming_uniform's bound depends on fan_in = in, which the slice keeps.
  if (in > 0) nn::init::kaiming_uniform_(weight, {.a = std::sqrt(5.0)});
  if (o.bias) bias = register_parameter("bias", zeros({out_per_rank}));
}

std::shared_ptr<ColumnParallelLinear> ColumnParallelLinear::from_full(const nn::Linear& full, GroupPtr group,
                                                                      ColumnParallelOptions options) {
  options.bias = full.bias.defined();
  auto layer = std::make_shared<ColumnParallelLinear>(full.in_features, full.out_features, group, options);
  layer->to(full.weight.device(), full.weight.dtype());
  copy_into(layer->weight, shard_of(full.weight, 0, *group, "ColumnParallelLinear"));
  if (options.bias) copy_into(layer->bias, shard_of(full.bias, 0, *group, "ColumnParallelLinear"));
  return layer;
}

Tensor ColumnParallelLinear::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) == in_features, "ColumnParallelLinear: expected input [..., ",
              in_features, "], got ", x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  Tensor input = options.sequence_parallel ? gather_from_sequence_parallel_region(x, options.sequence_dim, group)
                                           : copy_to_tensor_parallel_region(x, group);
  Tensor y = linear(input, weight, bias);
  return options.gather_output ? gather_from_tensor_parallel_region(y, group) : y;
}

std::string ColumnParallelLinear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", out_per_rank=" + std::to_string(out_per_rank) + ", tp=" + std::to_string(group->size()) +
         ", gather_output=" + (options.gather_output ? "True" : "False");
}

RowParallelLinear::RowParallelLinear(int64_t in, int64_t out, GroupPtr g, const RowParallelOptions& o)
    : Module("RowParallelLinear"), in_features(in), out_features(out), options(o), group(std::move(g)) {
  ANVIL_CHECK(group != nullptr, "RowParallelLinear: no tensor-parallel group");
  in_per_rank = per_rank(in, *group, "RowParallelLinear", "in_features");
  weight = register_parameter("weight", empty({out, in_per_rank}));
  // The full layer's bound: its fan_in is all of in, not this rank's slice.
  const double bound = in > 0 ? 1.0 / std::sqrt(static_cast<double>(in)) : 0.0;
  nn::init::uniform_(weight, -bound, bound);
  if (o.bias) bias = register_parameter("bias", zeros({out}));
}

std::shared_ptr<RowParallelLinear> RowParallelLinear::from_full(const nn::Linear& full, GroupPtr group,
                                                                RowParallelOptions options) {
  options.bias = full.bias.defined();
  auto layer = std::make_shared<RowParallelLinear>(full.in_features, full.out_features, group, options);
  layer->to(full.weight.device(), full.weight.dtype());
  copy_into(layer->weight, shard_of(full.weight, 1, *group, "RowParallelLinear"));
  if (options.bias) copy_into(layer->bias, full.bias.detach());
  return layer;
}

Tensor RowParallelLinear::forward(const Tensor& x) {
  const int64_t expected = options.input_is_parallel ? in_per_rank : in_features;
  ANVIL_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) == expected, "RowParallelLinear: expected input [..., ",
              expected, "]", options.input_is_parallel ? " (this rank's slice)" : "", ", got ",
              x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  Tensor input = options.input_is_parallel ? x : scatter_to_tensor_parallel_region(x, group);
  Tensor partial = linear(input, weight);
  // The bias is added once, after the sum, not once per rank.
  Tensor y = options.sequence_parallel
                 ? reduce_scatter_to_sequence_parallel_region(partial, options.sequence_dim, group)
                 : reduce_from_tensor_parallel_region(partial, group);
  return bias.defined() ? y + bias : y;
}

std::string RowParallelLinear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", in_per_rank=" + std::to_string(in_per_rank) + ", tp=" + std::to_string(group->size()) +
         ", input_is_parallel=" + (options.input_is_parallel ? "True" : "False");
}

VocabParallelEmbedding::VocabParallelEmbedding(int64_t v, int64_t d, GroupPtr g)
    : Module("VocabParallelEmbedding"), num_embeddings(v), embedding_dim(d), group(std::move(g)) {
  ANVIL_CHECK(group != nullptr, "VocabParallelEmbedding: no tensor-parallel group");
  vocab_per_rank = per_rank(v, *group, "VocabParallelEmbedding", "num_embeddings");
  vocab_start = group->rank() * vocab_per_rank;
  weight = register_parameter("weight", empty({vocab_per_rank, d}));
  nn::init::normal_(weight);
}

std::shared_ptr<VocabParallelEmbedding> VocabParallelEmbedding::from_full(const nn::Embedding& full, GroupPtr group) {
  ANVIL_CHECK(!full.padding_idx, "VocabParallelEmbedding::from_full: padding_idx is not supported");
  auto layer = std::make_shared<VocabParallelEmbedding>(full.num_embeddings, full.embedding_dim, group);
  layer->to(full.weight.device(), full.weight.dtype());
  copy_into(layer->weight, shard_of(full.weight, 0, *group, "VocabParallelEmbedding"));
  return layer;
}

Tensor VocabParallelEmbedding::forward(const Tensor& ids) {
  ANVIL_CHECK(ids.defined() && ids.dtype() == kInt64, "VocabParallelEmbedding: expected int64 ids, got ",
              ids.defined() ? std::string(dtype_name(ids.dtype())) : std::string("an undefined tensor"));
  if (ids.numel() > 0) {
    // Out-of-range ids would be nobody's rows and embed silently as zeros.
    const int64_t lo = ids.min().item<int64_t>(), hi = ids.max().item<int64_t>();
    ANVIL_CHECK(lo >= 0 && hi < num_embeddings, "VocabParallelEmbedding: ids must be in [0, ", num_embeddings,
                "), got ids in [", lo, ", ", hi, "]");
  }
  const Tensor outside = logical_or(lt(ids, vocab_start), ge(ids, vocab_start + vocab_per_rank));
  const Tensor local_ids = ids.sub(vocab_start).masked_fill(outside, 0);
  // Rows this rank does not own are zeroed (and get no gradient); the sum
  // over ranks then holds each id's row exactly once.
  Tensor rows = embedding(weight, local_ids) * logical_not(outside).unsqueeze(-1).to(weight.dtype());
  return reduce_from_tensor_parallel_region(rows, group);
}

std::string VocabParallelEmbedding::extra_repr() const {
  return "num_embeddings=" + std::to_string(num_embeddings) + ", embedding_dim=" + std::to_string(embedding_dim) +
         ", vocab_start=" + std::to_string(vocab_start) + ", vocab_per_rank=" + std::to_string(vocab_per_rank);
}

void all_reduce_sequence_parallel_grads(const std::vector<Tensor>& parameters, ProcessGroup& group) {
  for (const Tensor& p : parameters) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor summed = all_reduce_sum(g, group);
    NoGradGuard no_grad;
    g.copy_(summed);
  }
}

}  // namespace anvil::distributed::tensor_parallel
