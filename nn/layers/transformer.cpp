#include "nn/layers/transformer.h"

#include <sstream>

#include "core/ops/nn_ops.h"
#include "core/ops/shape.h"
#include "nn/functional.h"
#include "nn/layers/activation.h"
#include "nn/layers/dropout.h"

namespace anvil::nn {

namespace {

void check_options(const char* name, const TransformerOptions& o) {
  ANVIL_CHECK(o.n_embd > 0 && o.n_head > 0 && o.n_embd % o.n_head == 0, name,
              ": expected positive n_embd divisible by a positive n_head, got n_embd ", o.n_embd, ", n_head ",
              o.n_head);
  ANVIL_CHECK(o.dropout >= 0 && o.dropout <= 1 && o.mlp_ratio > 0, name,
              ": expected dropout in [0, 1] and a positive mlp_ratio, got dropout ", o.dropout, ", mlp_ratio ",
              o.mlp_ratio);
}

}  // namespace

CausalSelfAttention::CausalSelfAttention(const TransformerOptions& o) : Module("CausalSelfAttention"), options(o) {
  check_options("CausalSelfAttention", o);
  qkv = register_module("qkv", std::make_shared<Linear>(o.n_embd, 3 * o.n_embd, o.bias));
  proj = register_module("proj", std::make_shared<Linear>(o.n_embd, o.n_embd, o.bias));
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined() && x.dim() == 3 && x.size(2) == options.n_embd, "CausalSelfAttention: expected input [B, T, ",
              options.n_embd, "], got ", x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  const int64_t batch = x.size(0), steps = x.size(1), heads = options.n_head, head_dim = options.n_embd / heads;
  // [B, T, 3C] -> q, k, v as [B, heads, T, head_dim].
  std::vector<Tensor> parts = chunk(qkv->forward(x), 3, -1);
  for (Tensor& p : parts) p = p.reshape({batch, steps, heads, head_dim}).transpose(1, 2);
  functional::AttentionOptions a;
  a.is_causal = true;
  a.dropout_p = is_training() ? options.dropout() : 0.0;
  Tensor y = functional::scaled_dot_product_attention(parts[0], parts[1], parts[2], a);
  y = y.transpose(1, 2).reshape({batch, steps, options.n_embd});  // heads side by side again
  return dropout(proj->forward(y), options.dropout, is_training());
}

std::string CausalSelfAttention::extra_repr() const {
  std::ostringstream os;
  os << "n_embd=" << options.n_embd << ", n_head=" << options.n_head << ", dropout=" << options.dropout;
  return os.str();
}

TransformerBlock::TransformerBlock(const TransformerOptions& o) : Module("TransformerBlock"), options(o) {
  check_options("TransformerBlock", o);
  const LayerNormOptions ln{.normalized_shape = {o.n_embd}, .bias = o.bias};
  ln1 = register_module("ln1", std::make_shared<LayerNorm>(ln));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(o));
  ln2 = register_module("ln2", std::make_shared<LayerNorm>(ln));
  const int64_t hidden = o.mlp_ratio * o.n_embd;
  mlp = register_module("mlp", std::make_shared<Sequential>(std::make_shared<Linear>(o.n_embd, hidden, o.bias),
                                                            std::make_shared<GELU>(GeluApprox::Tanh),
                                                            std::make_shared<Linear>(hidden, o.n_embd, o.bias),
                                                            std::make_shared<Dropout>(o.dropout)));
}

Tensor TransformerBlock::forward(const Tensor& x) {
  // h = x + attn(ln1(x)) and ln2(h) in one pass over memory (add_layer_norm);
  // the same numbers and gradients as writing the add and ln2->forward(h).
  auto [h, normed] = add_layer_norm(x, attn->forward(ln1->forward(x)), ln2->options.normalized_shape, ln2->weight,
                                    ln2->bias, ln2->options.eps);
  return h + mlp->forward(normed);
}

}  // namespace anvil::nn
