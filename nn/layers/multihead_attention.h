#pragma once
/// @file
/// MultiheadAttention, as torch.nn.MultiheadAttention: the same parameters
/// under the same names (in_proj_weight [3E, E], in_proj_bias [3E],
/// out_proj.weight, out_proj.bias; q_proj_weight, k_proj_weight,
/// v_proj_weight when kdim or vdim differ from embed_dim), so a PyTorch state
/// dict loads as is, and the same masks: key_padding_mask [N, S] and attn_mask
/// [L, S] or [N * heads, L, S], bool true meaning "may NOT attend" (PyTorch's
/// convention for this module, the opposite of scaled_dot_product_attention's)
/// or floating values added to the scores.
///
///     nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(64, 8).batch_first(true).dropout(0.1));
///     auto [out, weights] = mha.forward(q, k, v, {.key_padding_mask = pad, .need_weights = true});
///     Tensor y = mha.forward(q, k, v, nn::MHAForwardOptions().need_weights(false).is_causal(true)).first;
///
/// Without need_weights the heads go through the fused
/// scaled_dot_product_attention op; with it, the composed matmul/softmax path
/// computes the weights it returns (averaged over the heads by default).
/// Differences from PyTorch: is_causal builds the causal mask itself (PyTorch
/// asks for attn_mask too), and on the fused path a query whose keys are all
/// masked gives 0, not NaN.
///
/// add_bias_kv appends the learned bias_k and bias_v ([1, 1, E], PyTorch's
/// names) to the projected keys and values, and add_zero_attn a zero key and
/// value after them (per head), as PyTorch does: the key sequence grows by one
/// or two, the masks are padded with "may attend" for the new keys, and the
/// returned weights have S + 1 (or S + 2) columns.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "core/base/option_field.h"
#include "nn/layers/linear.h"
#include "nn/module.h"

namespace anvil::nn {

/// MultiheadAttention's settings, as libtorch's nn::MultiheadAttentionOptions.
struct MultiheadAttentionOptions {
  ANVIL_OPTION(MultiheadAttentionOptions, int64_t, embed_dim) = 0;  ///< E, the model width (split among the heads)
  ANVIL_OPTION(MultiheadAttentionOptions, int64_t, num_heads) = 1;  ///< heads; embed_dim must divide by it
  ANVIL_OPTION(MultiheadAttentionOptions, double, dropout) = 0.0;  ///< on the attention weights, in training
  ANVIL_OPTION(MultiheadAttentionOptions, bool, bias) = true;  ///< in_proj_bias and out_proj.bias
  ANVIL_OPTION(MultiheadAttentionOptions, int64_t, kdim) = 0;  ///< 0: embed_dim
  ANVIL_OPTION(MultiheadAttentionOptions, int64_t, vdim) = 0;  ///< 0: embed_dim
  ANVIL_OPTION(MultiheadAttentionOptions, bool, batch_first) = false;  ///< [N, L, E] instead of [L, N, E]
  ANVIL_OPTION(MultiheadAttentionOptions, bool, add_bias_kv) = false;  ///< bias_k, bias_v appended to the keys
  ANVIL_OPTION(MultiheadAttentionOptions, bool, add_zero_attn) = false;  ///< a zero key and value appended
};

/// The per-call arguments of forward, as PyTorch's keyword arguments.
struct MHAForwardOptions {
  ANVIL_OPTION(MHAForwardOptions, Tensor, key_padding_mask) = {};  ///< [N, S] (or [S] unbatched)
  /// also return the attention weights (else the second result is undefined)
  ANVIL_OPTION(MHAForwardOptions, bool, need_weights) = true;
  ANVIL_OPTION(MHAForwardOptions, Tensor, attn_mask) = {};  ///< [L, S] or [N * num_heads, L, S]
  ANVIL_OPTION(MHAForwardOptions, bool, average_attn_weights) = true;  ///< weights [N, L, S], else [N, H, L, S]
  ANVIL_OPTION(MHAForwardOptions, bool, is_causal) = false;  ///< query i sees keys 0..i
};

/// Attention over several heads, as torch.nn.MultiheadAttention (see the file comment).
class MultiheadAttention : public Module {
 public:
  /// Width `embed_dim`, `num_heads` heads, other settings default.
  MultiheadAttention(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttention(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttention(const MultiheadAttentionOptions& options);  ///< As `options` say.

  /// (attn_output, attn_weights); the weights are undefined without need_weights.
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const MHAForwardOptions& o = {});
  /// libtorch's positional form: forward(q, k, v, key_padding_mask, need_weights, attn_mask, average_attn_weights).
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask, bool need_weights = true,
                                    const Tensor& attn_mask = {}, bool average_attn_weights = true) {
    return forward(query, key, value,
                   MHAForwardOptions{key_padding_mask, need_weights, attn_mask, average_attn_weights, false});
  }
  /// Self-attention without weights: forward(x, x, x).first.
  Tensor forward(const Tensor& x) override;
  /// {query, key, value[, key_padding_mask[, attn_mask]]} (undefined = absent), without weights.
  Tensor forward_inputs(const std::vector<Tensor>& inputs) override;
  std::string extra_repr() const override;
  void reset_parameters();  ///< Re-initialises as PyTorch does: xavier_uniform input projections, zero biases.

  MultiheadAttentionOptions options;  ///< the settings it was built with
  int64_t head_dim = 0;  ///< embed_dim / num_heads
  Tensor in_proj_weight;  ///< [3E, E], when kdim == vdim == E
  ///@{
  /// [E, E], [E, kdim], [E, vdim] otherwise
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;
  ///@}
  Tensor in_proj_bias;  ///< [3E], when bias
  std::shared_ptr<Linear> out_proj;  ///< the output projection [E, E]
  ///@{
  /// [1, 1, E], when add_bias_kv
  Tensor bias_k, bias_v;
  ///@}

 private:
  bool same_embed_dim() const { return options.kdim == options.embed_dim && options.vdim == options.embed_dim; }
};

}  // namespace anvil::nn
