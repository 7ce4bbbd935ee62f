#pragma once
/// @file
/// GPT-2 style causal self-attention and pre-LayerNorm transformer block, on
/// [B, T, C] input (C = n_embd).
///
///     auto block = std::make_shared<nn::TransformerBlock>(nn::TransformerOptions{.n_embd = 128, .n_head = 4});
///     Tensor y = block->forward(x);  // [B, T, 128]
#include <cstdint>
#include <memory>

#include "core/base/option_field.h"
#include "nn/layers/container.h"
#include "nn/layers/layernorm.h"
#include "nn/layers/linear.h"
#include "nn/module.h"

namespace anvil::nn {

/// TransformerBlock's and CausalSelfAttention's settings.
struct TransformerOptions {
  ANVIL_OPTION(TransformerOptions, int64_t, n_embd) = 0;  ///< C, the model width
  ANVIL_OPTION(TransformerOptions, int64_t, n_head) = 1;  ///< attention heads; n_embd must divide by them
  /// On attention weights and on each residual branch, in training.
  ANVIL_OPTION(TransformerOptions, double, dropout) = 0.0;
  ANVIL_OPTION(TransformerOptions, bool, bias) = true;  ///< biases in the Linear and LayerNorm layers
  ANVIL_OPTION(TransformerOptions, int64_t, mlp_ratio) = 4;  ///< hidden width of the MLP, in multiples of n_embd
};

/// Multi-head attention where position t attends to positions 0..t. One
/// Linear makes q, k and v ("qkv", [3C, C]); another projects back ("proj").
class CausalSelfAttention : public Module {
 public:
  explicit CausalSelfAttention(const TransformerOptions& options);  ///< The qkv and proj layers for `options`.
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  TransformerOptions options;  ///< the settings it was built with
  ///@{
  /// q, k, v in one Linear [3C, C], and the output projection [C, C]
  std::shared_ptr<Linear> qkv, proj;
  ///@}
};

/// x + attn(ln1(x)), then + mlp(ln2(x)); mlp = Linear(C, 4C), GELU (tanh),
/// Linear(4C, C), Dropout.
class TransformerBlock : public Module {
 public:
  explicit TransformerBlock(const TransformerOptions& options);  ///< The attention and MLP sublayers for `options`.
  Tensor forward(const Tensor& x) override;

  TransformerOptions options;  ///< the settings it was built with
  ///@{
  /// the LayerNorms before attention and before the MLP
  std::shared_ptr<LayerNorm> ln1, ln2;
  ///@}
  std::shared_ptr<CausalSelfAttention> attn;  ///< the causal self-attention
  std::shared_ptr<Sequential> mlp;  ///< Linear(C, mlp_ratio C), GELU (tanh), Linear(mlp_ratio C, C), Dropout
};

}  // namespace anvil::nn
