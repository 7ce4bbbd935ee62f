#pragma once
/// @file
/// BERT's encoder (HuggingFace transformers' BertModel), with the same module
/// tree, so its state_dict keys are PyTorch's ("embeddings.word_embeddings.weight",
/// "encoder.layer.0.attention.self.query.weight", ...) and a model.safetensors
/// saved by transformers loads as is:
///
///     auto bert = nn::BertModel::from_pretrained(dir);  // config.json + model.safetensors
///     nn::BertOutput out = bert->forward(ids, mask);     // ids, mask: int64 [B, T]
///     out.last_hidden_state;                            // [B, T, hidden]
///
/// Post-LN layers: x = LN(x + attention(x)); x = LN(x + FFN(x)), with the exact
/// (erf) GELU. The attention is the fused scaled_dot_product_attention (the
/// composed math path while attention dropout is on, in training); padding
/// keys are masked out.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "nn/layers/container.h"
#include "nn/layers/embedding.h"
#include "nn/layers/layernorm.h"
#include "nn/layers/linear.h"
#include "nn/module.h"

namespace anvil::nn {

/// config.json's fields (transformers' BertConfig); the defaults are BERT-base's.
struct BertConfig {
  int64_t vocab_size = 30522;  ///< tokens in the vocabulary
  int64_t hidden_size = 768;  ///< H, the width of every layer
  int64_t num_hidden_layers = 12;  ///< encoder layers
  int64_t num_attention_heads = 12;  ///< heads per attention; hidden_size must divide by them
  int64_t intermediate_size = 3072;  ///< width of each layer's feed-forward block
  int64_t max_position_embeddings = 512;  ///< the longest sequence (rows of the position embedding)
  int64_t type_vocab_size = 2;  ///< token types (segments A and B)
  double layer_norm_eps = 1e-12;  ///< the LayerNorms' epsilon
  double hidden_dropout_prob = 0.1;  ///< dropout on the embeddings and each sublayer's output, in training
  double attention_probs_dropout_prob = 0.1;  ///< dropout on the attention probabilities, in training
  int64_t pad_token_id = 0;  ///< the padding token's id
  bool add_pooling_layer = true;  ///< the [CLS] pooler (not in config.json: PyTorch's constructor argument)

  /// Only "bert" with hidden_act "gelu" (erf) and absolute positions is accepted.
  static BertConfig from_json_file(const std::filesystem::path& config_json);
};

/// The word, position and token-type embeddings, summed, normalised and dropped out: BertEmbeddings.
class BertEmbeddings : public Module {
 public:
  explicit BertEmbeddings(const BertConfig& config);  ///< Its submodules for `config`.
  ///@{
  /// input_ids, token_type_ids (undefined: zeros): int64 [B, T] -> [B, T, hidden].
  Tensor forward(const Tensor& input_ids, const Tensor& token_type_ids);
  Tensor forward(const Tensor& input_ids) override { return forward(input_ids, Tensor()); }
  ///@}

  BertConfig config;  ///< the configuration it was built with
  ///@{
  /// the word, position and token-type tables
  std::shared_ptr<Embedding> word_embeddings, position_embeddings, token_type_embeddings;
  ///@}
  std::shared_ptr<LayerNorm> layer_norm;  ///< "LayerNorm", PyTorch's name
  Tensor position_ids;  ///< buffer [1, max_position_embeddings]: 0, 1, 2, ...
};

/// Multi-head self-attention with padding keys masked: BertSelfAttention.
class BertSelfAttention : public Module {
 public:
  explicit BertSelfAttention(const BertConfig& config);  ///< Its projections for `config`.
  /// x [B, T, hidden]; key_mask bool [B, T], true where a key may be attended (undefined: all).
  Tensor forward(const Tensor& x, const Tensor& key_mask);

  BertConfig config;  ///< the configuration it was built with
  ///@{
  /// the query, key and value projections [H, H]
  std::shared_ptr<Linear> query, key, value;
  ///@}
};

/// dense, dropout, then LayerNorm over the sum with the sublayer's input:
/// both of BERT's residual ends (BertSelfOutput and BertOutput).
class BertResidualOutput : public Module {
 public:
  /// Named `type_name` (BertSelfOutput or BertOutput), its dense layer taking `in_features`.
  BertResidualOutput(const std::string& type_name, int64_t in_features, const BertConfig& config);
  Tensor forward(const Tensor& x, const Tensor& residual);  ///< layer_norm(residual + dropout(dense(x))).

  BertConfig config;  ///< the configuration it was built with
  std::shared_ptr<Linear> dense;  ///< the projection back to hidden_size
  std::shared_ptr<LayerNorm> layer_norm;  ///< "LayerNorm"
};

/// Self-attention and its residual output: BertAttention.
class BertAttention : public Module {
 public:
  explicit BertAttention(const BertConfig& config);  ///< Its submodules for `config`.
  /// x after self-attention and its residual LayerNorm; key_mask marks the real (non-padding) keys.
  Tensor forward(const Tensor& x, const Tensor& key_mask);

  std::shared_ptr<BertSelfAttention> self_attention;  ///< "self"
  std::shared_ptr<BertResidualOutput> output;  ///< "output": dense, dropout, residual and LayerNorm
};

/// One encoder layer: attention, then the feed-forward block, each with its residual LayerNorm.
class BertLayer : public Module {
 public:
  explicit BertLayer(const BertConfig& config);  ///< Its submodules for `config`.
  Tensor forward(const Tensor& x, const Tensor& key_mask);  ///< The layer on x [B, T, H]; key_mask marks the real keys.

  std::shared_ptr<BertAttention> attention;  ///< the attention sublayer
  std::shared_ptr<Sequential> intermediate;  ///< holds "dense" then the erf GELU
  /// "output": dense, dropout, residual and LayerNorm after the feed-forward
  std::shared_ptr<BertResidualOutput> output;
};

/// The stack of encoder layers: BertEncoder.
class BertEncoder : public Module {
 public:
  explicit BertEncoder(const BertConfig& config);  ///< num_hidden_layers layers for `config`.
  /// x [B, T, H] through every layer; key_mask marks the real keys.
  Tensor forward(const Tensor& x, const Tensor& key_mask);

  std::shared_ptr<ModuleList> layer;  ///< of BertLayer
};

/// tanh(dense(h[:, 0])): BERT's sentence vector for next-sentence prediction.
class BertPooler : public Module {
 public:
  explicit BertPooler(const BertConfig& config);  ///< Its dense layer for `config`.
  Tensor forward(const Tensor& hidden) override;

  std::shared_ptr<Linear> dense;  ///< [H, H]
};

/// What BertModel::forward returns, as transformers' BaseModelOutputWithPooling.
struct BertOutput {
  Tensor last_hidden_state;  ///< [B, T, hidden]
  Tensor pooler_output;  ///< [B, hidden]: tanh(dense(first token)); undefined without a pooler
};

/// BERT's encoder with transformers' module tree and parameter names (see the file comment).
class BertModel : public Module {
 public:
  /// Its embeddings, encoder and (with add_pooling_layer) pooler for `config`, randomly initialised.
  explicit BertModel(const BertConfig& config);
  ///@{
  /// input_ids int64 [B, T]; attention_mask [B, T] (1 token, 0 padding;
  /// undefined: all tokens); token_type_ids int64 [B, T] (undefined: zeros).
  BertOutput forward(const Tensor& input_ids, const Tensor& attention_mask, const Tensor& token_type_ids = {});
  Tensor forward(const Tensor& input_ids) override { return forward(input_ids, Tensor()).last_hidden_state; }
  ///@}
  std::string extra_repr() const override;

  /// The state_dict in a safetensors file, by PyTorch's key names. Errors name
  /// the file and every missing, unexpected or mis-shaped tensor. A file
  /// without "embeddings.position_ids" (newer transformers do not save it)
  /// keeps the arange.
  void load_safetensors(const std::filesystem::path& path);
  /// config.json and model.safetensors in a directory (as save_pretrained
  /// writes them); the pooler is built when the file has its weights.
  static std::shared_ptr<BertModel> from_pretrained(const std::filesystem::path& dir);

  BertConfig config;  ///< the configuration it was built with
  std::shared_ptr<BertEmbeddings> embeddings;  ///< "embeddings"
  std::shared_ptr<BertEncoder> encoder;  ///< "encoder"
  std::shared_ptr<BertPooler> pooler;  ///< null without a pooler
};

/// sentence-transformers' mean pooling: the mean of the token vectors where
/// attention_mask is 1 ([B, T, H], [B, T] -> [B, H]); a row with no token
/// divides by 1e-9 as the reference does (giving zeros).
Tensor mean_pooling(const Tensor& token_embeddings, const Tensor& attention_mask);
/// x / max(||x||_2, eps) over the last dim (torch.nn.functional.normalize).
Tensor l2_normalize(const Tensor& x, double eps = 1e-12);

}  // namespace anvil::nn
