#pragma once
/// @file
/// A sentence-transformers model directory run end to end: BERT's tokenizer,
/// BertModel, mean pooling over the attention mask and (when the model's
/// modules.json lists it) L2 normalization, as SentenceTransformer.encode does.
///
///     nn::SentenceEmbedder model(dir);   // e.g. all-MiniLM-L6-v2
///     model.to(Device::cuda(0));
///     Tensor e = model.encode({"A man is eating food.", "Someone eats."});  // [2, 384] float32
///     Tensor cos = matmul(e, e.t());     // normalized: dot products are cosines
///
/// Its BertModel (model()) can be trained in place (samples/finetune_minilm.cpp);
/// save(dir) then writes a folder that this class and SentenceTransformer(dir)
/// both load.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "nn/models/bert.h"
#include "nn/text/bert_tokenizer.h"

namespace anvil::nn {

/// How encode batches its texts.
struct EncodeOptions {
  int64_t batch_size = 32;  ///< texts per forward pass
  /// Texts are encoded in batches of similar token counts (less padding), then
  /// returned in input order, as sentence-transformers does.
  bool sort_by_length = true;
};

/// A sentence-transformers model directory as one object: tokenizer, BertModel, pooling and normalisation.
class SentenceEmbedder {
 public:
  /// Reads tokenizer.json, config.json, model.safetensors and, when present,
  /// sentence_bert_config.json (max_seq_length), 1_Pooling/config.json (only
  /// mean pooling is implemented) and modules.json (Normalize).
  explicit SentenceEmbedder(const std::filesystem::path& dir);

  /// [texts.size(), hidden] float32 on the model's device, in input order;
  /// runs without autograd, in eval mode.
  Tensor encode(const std::vector<std::string>& texts, const EncodeOptions& options = {}) const;
  /// One batch as given: the tokenizer's ids and mask, then the model and pooling.
  Tensor encode_batch(const text::BatchEncoding& batch) const;

  /// A sentence-transformers folder holding the model as it is now:
  /// model.safetensors (the BertModel's state_dict by PyTorch's key names,
  /// metadata {"format": "pt"}), and the source folder's other files copied
  /// unchanged: its top-level .json and .txt files (config, tokenizer,
  /// modules.json, sentence_bert_config.json) and the module folders that
  /// modules.json names (1_Pooling/...). Other weight files (pytorch_model.bin,
  /// onnx/) are not copied: they would hold the old weights. `dir` is created;
  /// it must not be the source folder.
  void save(const std::filesystem::path& dir) const;

  void to(Device device) { model_->to(device); }  ///< Moves the model to `device`.
  /// The model's floating parameters (bfloat16 for faster inference); the
  /// embeddings come back in float32 either way.
  void to(DType dtype) { model_->to(dtype); }
  Device device() const { return model_->device(); }  ///< Where the model is.
  int64_t dimension() const { return model_->config.hidden_size; }  ///< The embedding's width.
  /// The longest token sequence encoded; longer texts are truncated.
  int64_t max_seq_length() const { return tokenizer_.options().max_length; }
  /// Truncate encodings at `tokens` (special tokens included), as setting
  /// SentenceTransformer.max_seq_length; 2..max_position_embeddings. save()
  /// keeps the source folder's sentence_bert_config.json.
  void set_max_seq_length(int64_t tokens);
  const std::filesystem::path& source_dir() const { return source_dir_; }  ///< The directory it was loaded from.
  /// Whether encode L2-normalises (the directory's modules.json lists Normalize).
  bool normalizes() const { return normalize_; }
  const text::BertTokenizer& tokenizer() const { return tokenizer_; }  ///< The tokenizer.
  const std::shared_ptr<BertModel>& model() const { return model_; }  ///< The BertModel, to train or inspect.

 private:
  std::filesystem::path source_dir_;
  text::BertTokenizer tokenizer_;
  std::shared_ptr<BertModel> model_;
  bool normalize_ = false;
};

}  // namespace anvil::nn
