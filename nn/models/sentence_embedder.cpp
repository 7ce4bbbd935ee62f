#include "nn/models/sentence_embedder.h"

#include <algorithm>
#include <fstream>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "nn/serialize/json_fields.h"
#include "nn/serialize/safetensors.h"

namespace anvil::nn {

namespace {

// The JSON in dir/name, or null when the file is absent.
nlohmann::json read_optional_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    ANVIL_CHECK(false, "SentenceEmbedder: ", path.string(), " is not JSON: ", e.what());
  }
  return nullptr;
}

}  // namespace

SentenceEmbedder::SentenceEmbedder(const std::filesystem::path& dir)
    : source_dir_(dir),
      tokenizer_(text::BertTokenizer::from_file(dir / "tokenizer.json")),
      model_(BertModel::from_pretrained(dir)) {
  // sentence-transformers truncates at max_seq_length, not at the
  // tokenizer.json's own truncation setting.
  nlohmann::json st = read_optional_json(dir / "sentence_bert_config.json");
  int64_t max_length = std::min<int64_t>(tokenizer_.options().max_length, model_->config.max_position_embeddings);
  max_length = json_integer_field(st, "max_seq_length", max_length,
                                  "SentenceEmbedder: " + (dir / "sentence_bert_config.json").string());
  ANVIL_CHECK(max_length >= 2 && max_length <= model_->config.max_position_embeddings,
              "SentenceEmbedder: ", dir.string(), ": max_seq_length ", max_length, " is outside 2..",
              model_->config.max_position_embeddings);
  set_max_seq_length(max_length);

  nlohmann::json pooling = read_optional_json(dir / "1_Pooling" / "config.json");
  if (pooling.is_object()) {
    for (const char* mode : {"pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                             "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"})
      ANVIL_CHECK(!pooling.value(mode, false), "SentenceEmbedder: ", dir.string(), " asks for ", mode,
                  "; only mean pooling (pooling_mode_mean_tokens) is implemented");
  }
  nlohmann::json modules = read_optional_json(dir / "modules.json");
  if (modules.is_array())
    for (const auto& m : modules)
      normalize_ = normalize_ || m.value("type", "") == "sentence_transformers.models.Normalize";
}

void SentenceEmbedder::set_max_seq_length(int64_t tokens) {
  ANVIL_CHECK(tokens >= 2 && tokens <= model_->config.max_position_embeddings,
              "SentenceEmbedder::set_max_seq_length: expected 2..", model_->config.max_position_embeddings,
              " tokens (the model's positions), got ", tokens);
  tokenizer_.options().max_length = tokens;
}

void SentenceEmbedder::save(const std::filesystem::path& dir) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  ANVIL_CHECK(!fs::exists(dir) || !fs::equivalent(dir, source_dir_, ec), "SentenceEmbedder::save: '", dir.string(),
              "' is the folder the model was loaded from; save to another one");
  fs::create_directories(dir);
  // The weights first: a folder with new config files and no weights would
  // load as the wrong model.
  serialize::save_safetensors(dir / "model.safetensors", model_->state_dict(), {{"format", "pt"}});
  for (const auto& entry : fs::directory_iterator(source_dir_)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".json" || ext == ".txt"))
      fs::copy_file(entry.path(), dir / entry.path().filename(), fs::copy_options::overwrite_existing);
  }
  // The modules' own folders (1_Pooling/config.json, ...), as modules.json lists them.
  nlohmann::json modules = read_optional_json(source_dir_ / "modules.json");
  if (!modules.is_array()) return;
  for (const auto& m : modules) {
    const std::string path = m.value("path", "");
    const fs::path from = source_dir_ / path;
    if (path.empty() || !fs::is_directory(from)) continue;  // Normalize has no folder of its own
    bool inside = fs::path(path).is_relative();
    for (const auto& part : fs::path(path)) inside = inside && part != "..";
    ANVIL_CHECK(inside, "SentenceEmbedder::save: ", (source_dir_ / "modules.json").string(), " names module path '",
                path, "', outside the model folder");
    fs::create_directories(dir / path);
    fs::copy(from, dir / path, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  }
}

Tensor SentenceEmbedder::encode_batch(const text::BatchEncoding& batch) const {
  NoGradGuard no_grad;
  model_->eval();
  const Device device = model_->device();
  Tensor mask = batch.attention_mask.to(device);
  BertOutput out = model_->forward(batch.input_ids.to(device), mask, batch.token_type_ids.to(device));
  Tensor pooled = mean_pooling(out.last_hidden_state, mask).to(kFloat32);
  return normalize_ ? l2_normalize(pooled) : pooled;
}

Tensor SentenceEmbedder::encode(const std::vector<std::string>& texts, const EncodeOptions& options) const {
  ANVIL_CHECK(options.batch_size > 0, "SentenceEmbedder::encode: batch_size must be positive, got ",
              options.batch_size);
  const Device device = model_->device();
  if (texts.empty()) return zeros({0, dimension()}, TensorOptions(kFloat32).device(device));
  std::vector<size_t> order(texts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  if (options.sort_by_length) {
    // Longest first (by bytes, a cheap proxy for tokens), as sentence-transformers.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return texts[a].size() > texts[b].size(); });
  }
  std::vector<Tensor> parts;
  for (size_t start = 0; start < texts.size(); start += static_cast<size_t>(options.batch_size)) {
    const size_t end = std::min(texts.size(), start + static_cast<size_t>(options.batch_size));
    std::vector<std::string> chunk;
    for (size_t i = start; i < end; ++i) chunk.push_back(texts[order[i]]);
    parts.push_back(encode_batch(tokenizer_.encode_batch(chunk)));
  }
  Tensor sorted = cat(parts, 0);
  if (!options.sort_by_length) return sorted;
  // Row order[i] of the result is row i of `sorted`.
  std::vector<int64_t> inverse(texts.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[order[i]] = static_cast<int64_t>(i);
  return index_select(sorted, 0, from_vector(inverse, {static_cast<int64_t>(inverse.size())}).to(device));
}

}  // namespace anvil::nn
