#include "nn/models/bert.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/factory.h"
#include "core/ops.h"
#include "nn/functional.h"
#include "nn/layers/activation.h"
#include "nn/serialize/json_fields.h"
#include "nn/serialize/safetensors.h"

namespace anvil::nn {

namespace {

std::string shape_or_undefined(const Tensor& t) { return t.defined() ? t.shape_str() : std::string("undefined"); }

// Checks x is [B, T] int64 (ids) or, for a mask, any dtype of that shape.
void check_ids(const char* op, const char* name, const Tensor& t, const Tensor& like) {
  if (!t.defined()) return;
  ANVIL_CHECK(t.dim() == 2 && t.shape() == like.shape(), op, ": expected ", name, " of input_ids' shape ",
              like.shape_str(), ", got ", t.shape_str());
}

}  // namespace

BertConfig BertConfig::from_json_file(const std::filesystem::path& path) {
  const char* op = "BertConfig::from_json_file";
  std::ifstream in(path);
  ANVIL_CHECK(in, op, ": cannot open ", path.string());
  BertConfig c;
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    const std::string where = std::string(op) + ": " + path.string();
    ANVIL_CHECK(j.value("model_type", "bert") == "bert", op, ": ", path.string(), " is a '", j.value("model_type", ""),
                "' config; expected 'bert'");
    ANVIL_CHECK(j.value("hidden_act", "gelu") == "gelu", op, ": ", path.string(), " asks for hidden_act '",
                j.value("hidden_act", ""), "'; BertModel implements 'gelu' (erf)");
    ANVIL_CHECK(j.value("position_embedding_type", "absolute") == "absolute", op, ": ", path.string(),
                " asks for position_embedding_type '", j.value("position_embedding_type", ""),
                "'; BertModel implements 'absolute'");
    c.vocab_size = json_integer_field(j, "vocab_size", c.vocab_size, where);
    c.hidden_size = json_integer_field(j, "hidden_size", c.hidden_size, where);
    c.num_hidden_layers = json_integer_field(j, "num_hidden_layers", c.num_hidden_layers, where);
    c.num_attention_heads = json_integer_field(j, "num_attention_heads", c.num_attention_heads, where);
    c.intermediate_size = json_integer_field(j, "intermediate_size", c.intermediate_size, where);
    c.max_position_embeddings = json_integer_field(j, "max_position_embeddings", c.max_position_embeddings, where);
    c.type_vocab_size = json_integer_field(j, "type_vocab_size", c.type_vocab_size, where);
    c.layer_norm_eps = json_number_field(j, "layer_norm_eps", c.layer_norm_eps, where);
    c.hidden_dropout_prob = json_number_field(j, "hidden_dropout_prob", c.hidden_dropout_prob, where);
    c.attention_probs_dropout_prob =
        json_number_field(j, "attention_probs_dropout_prob", c.attention_probs_dropout_prob, where);
    c.pad_token_id = json_integer_field(j, "pad_token_id", c.pad_token_id, where);
  } catch (const nlohmann::json::exception& e) {
    ANVIL_CHECK(false, op, ": ", path.string(), " is not a BERT config.json: ", e.what());
  }
  return c;
}

BertEmbeddings::BertEmbeddings(const BertConfig& c) : Module("BertEmbeddings"), config(c) {
  word_embeddings = register_module("word_embeddings", std::make_shared<Embedding>(c.vocab_size, c.hidden_size));
  position_embeddings =
      register_module("position_embeddings", std::make_shared<Embedding>(c.max_position_embeddings, c.hidden_size));
  token_type_embeddings =
      register_module("token_type_embeddings", std::make_shared<Embedding>(c.type_vocab_size, c.hidden_size));
  layer_norm = register_module("LayerNorm", std::make_shared<LayerNorm>(LayerNormOptions{
                                                .normalized_shape = {c.hidden_size}, .eps = c.layer_norm_eps}));
  position_ids = register_buffer("position_ids", arange(c.max_position_embeddings).unsqueeze(0));
}

Tensor BertEmbeddings::forward(const Tensor& input_ids, const Tensor& token_type_ids) {
  ANVIL_CHECK(input_ids.defined() && input_ids.dim() == 2 && input_ids.dtype() == kInt64,
              "BertEmbeddings: expected input_ids int64 [batch, length], got ", shape_or_undefined(input_ids),
              input_ids.defined() ? std::string(" ") + dtype_name(input_ids.dtype()) : std::string());
  const int64_t length = input_ids.size(1);
  ANVIL_CHECK(length <= config.max_position_embeddings, "BertEmbeddings: ", length,
              " tokens are more than the model's max_position_embeddings ", config.max_position_embeddings);
  check_ids("BertEmbeddings", "token_type_ids", token_type_ids, input_ids);
  Tensor types = token_type_ids.defined() ? token_type_ids : zeros_like(input_ids);
  Tensor x = word_embeddings->forward(input_ids) + token_type_embeddings->forward(types) +
             position_embeddings->forward(position_ids.slice(1, 0, length));
  return dropout(layer_norm->forward(x), config.hidden_dropout_prob, is_training());
}

BertSelfAttention::BertSelfAttention(const BertConfig& c) : Module("BertSelfAttention"), config(c) {
  ANVIL_CHECK(c.hidden_size % c.num_attention_heads == 0, "BertSelfAttention: hidden_size ", c.hidden_size,
              " is not a multiple of num_attention_heads ", c.num_attention_heads);
  query = register_module("query", std::make_shared<Linear>(c.hidden_size, c.hidden_size));
  key = register_module("key", std::make_shared<Linear>(c.hidden_size, c.hidden_size));
  value = register_module("value", std::make_shared<Linear>(c.hidden_size, c.hidden_size));
}

Tensor BertSelfAttention::forward(const Tensor& x, const Tensor& key_mask) {
  const int64_t batch = x.size(0), length = x.size(1), heads = config.num_attention_heads;
  const int64_t head_dim = config.hidden_size / heads;
  auto split_heads = [&](const Tensor& t) { return t.reshape({batch, length, heads, head_dim}).transpose(1, 2); };
  functional::AttentionOptions o;
  // [B, T] -> [B, 1, 1, T]: every head and every query sees the same keys.
  if (key_mask.defined()) o.attn_mask = key_mask.unsqueeze(1).unsqueeze(1);
  o.dropout_p = is_training() ? config.attention_probs_dropout_prob : 0.0;
  Tensor y = functional::scaled_dot_product_attention(split_heads(query->forward(x)), split_heads(key->forward(x)),
                                                      split_heads(value->forward(x)), o);
  return y.transpose(1, 2).reshape({batch, length, config.hidden_size});
}

BertResidualOutput::BertResidualOutput(const std::string& type_name, int64_t in_features, const BertConfig& c)
    : Module(type_name), config(c) {
  dense = register_module("dense", std::make_shared<Linear>(in_features, c.hidden_size));
  layer_norm = register_module("LayerNorm", std::make_shared<LayerNorm>(LayerNormOptions{
                                                .normalized_shape = {c.hidden_size}, .eps = c.layer_norm_eps}));
}

Tensor BertResidualOutput::forward(const Tensor& x, const Tensor& residual) {
  return layer_norm->forward(dropout(dense->forward(x), config.hidden_dropout_prob, is_training()) + residual);
}

BertAttention::BertAttention(const BertConfig& c) : Module("BertAttention") {
  self_attention = register_module("self", std::make_shared<BertSelfAttention>(c));
  output = register_module("output", std::make_shared<BertResidualOutput>("BertSelfOutput", c.hidden_size, c));
}

Tensor BertAttention::forward(const Tensor& x, const Tensor& key_mask) {
  return output->forward(self_attention->forward(x, key_mask), x);
}

BertLayer::BertLayer(const BertConfig& c) : Module("BertLayer") {
  attention = register_module("attention", std::make_shared<BertAttention>(c));
  intermediate = register_module("intermediate", std::make_shared<Sequential>());
  intermediate->push_back("dense", std::make_shared<Linear>(c.hidden_size, c.intermediate_size));
  intermediate->push_back("intermediate_act_fn", std::make_shared<GELU>(GeluApprox::None));
  output = register_module("output", std::make_shared<BertResidualOutput>("BertOutput", c.intermediate_size, c));
}

Tensor BertLayer::forward(const Tensor& x, const Tensor& key_mask) {
  Tensor h = attention->forward(x, key_mask);
  return output->forward(intermediate->forward(h), h);
}

BertEncoder::BertEncoder(const BertConfig& c) : Module("BertEncoder") {
  layer = register_module("layer", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layer->push_back(std::make_shared<BertLayer>(c));
}

Tensor BertEncoder::forward(const Tensor& x, const Tensor& key_mask) {
  Tensor h = x;
  for (size_t i = 0; i < layer->size(); ++i) h = layer->at<BertLayer>(i)->forward(h, key_mask);
  return h;
}

BertPooler::BertPooler(const BertConfig& c) : Module("BertPooler") {
  dense = register_module("dense", std::make_shared<Linear>(c.hidden_size, c.hidden_size));
}

Tensor BertPooler::forward(const Tensor& hidden) { return tanh(dense->forward(hidden.select(1, 0))); }

BertModel::BertModel(const BertConfig& c) : Module("BertModel"), config(c) {
  ANVIL_CHECK(c.vocab_size > 0 && c.hidden_size > 0 && c.num_hidden_layers >= 0 && c.num_attention_heads > 0 &&
                  c.intermediate_size > 0 && c.max_position_embeddings > 0 && c.type_vocab_size > 0,
              "BertModel: expected positive sizes in the config, got vocab_size ", c.vocab_size, ", hidden_size ",
              c.hidden_size, ", num_hidden_layers ", c.num_hidden_layers, ", num_attention_heads ",
              c.num_attention_heads, ", intermediate_size ", c.intermediate_size);
  embeddings = register_module("embeddings", std::make_shared<BertEmbeddings>(c));
  encoder = register_module("encoder", std::make_shared<BertEncoder>(c));
  if (c.add_pooling_layer) pooler = register_module("pooler", std::make_shared<BertPooler>(c));
}

BertOutput BertModel::forward(const Tensor& input_ids, const Tensor& attention_mask, const Tensor& token_type_ids) {
  check_ids("BertModel", "attention_mask", attention_mask, input_ids);
  Tensor h = embeddings->forward(input_ids, token_type_ids);
  Tensor key_mask = attention_mask.defined() ? ne(attention_mask.to(h.device()), 0) : Tensor();
  BertOutput out;
  out.last_hidden_state = encoder->forward(h, key_mask);
  if (pooler) out.pooler_output = pooler->forward(out.last_hidden_state);
  return out;
}

std::string BertModel::extra_repr() const {
  std::ostringstream os;
  os << "layers=" << config.num_hidden_layers << ", hidden=" << config.hidden_size
     << ", heads=" << config.num_attention_heads << ", intermediate=" << config.intermediate_size
     << ", vocab=" << config.vocab_size;
  return os.str();
}

namespace {

// Loads `state` (read from `source`) into `model`, by PyTorch's key names.
void load_pretrained_state(BertModel& model, StateDict state, const std::filesystem::path& source) {
  bool has_position_ids = false;
  for (auto& [name, t] : state) has_position_ids = has_position_ids || name == "embeddings.position_ids";
  if (!has_position_ids) state.emplace_back("embeddings.position_ids", model.embeddings->position_ids.cpu());
  // Every parameter here is floating: an integer tensor in its place is a
  // wrong file, not something to cast.
  std::string wrong_dtype;
  for (auto& [name, t] : state)
    if (name != "embeddings.position_ids" && !is_floating(t.dtype()))
      wrong_dtype += (wrong_dtype.empty() ? "" : ", ") + name + " (" + dtype_name(t.dtype()) + ")";
  try {
    ANVIL_CHECK(wrong_dtype.empty(), "expected floating tensors, got ", wrong_dtype);
    model.load_state_dict(state, true);
  } catch (const Error& e) {
    ANVIL_CHECK(false, "BertModel: ", source.string(), " does not fit this ", model.extra_repr(), " model: ", e.what());
  }
}

}  // namespace

void BertModel::load_safetensors(const std::filesystem::path& path) {
  load_pretrained_state(*this, serialize::load_safetensors(path), path);
}

std::shared_ptr<BertModel> BertModel::from_pretrained(const std::filesystem::path& dir) {
  const auto weights = dir / "model.safetensors";
  ANVIL_CHECK(std::filesystem::exists(weights), "BertModel::from_pretrained: no model.safetensors in ", dir.string());
  BertConfig config = BertConfig::from_json_file(dir / "config.json");
  StateDict state = serialize::load_safetensors(weights);
  // transformers' from_pretrained builds the pooler and warns when its
  // weights are absent; here a file without them gives a model without one.
  config.add_pooling_layer = false;
  for (auto& [name, _] : state) config.add_pooling_layer = config.add_pooling_layer || name == "pooler.dense.weight";
  auto model = std::make_shared<BertModel>(config);
  load_pretrained_state(*model, std::move(state), weights);
  model->eval();
  return model;
}

Tensor mean_pooling(const Tensor& token_embeddings, const Tensor& attention_mask) {
  ANVIL_CHECK(token_embeddings.defined() && attention_mask.defined() && token_embeddings.dim() == 3 &&
                  attention_mask.dim() == 2 && token_embeddings.size(0) == attention_mask.size(0) &&
                  token_embeddings.size(1) == attention_mask.size(1),
              "mean_pooling: expected token_embeddings [B, T, H] and attention_mask [B, T], got ",
              shape_or_undefined(token_embeddings), " and ", shape_or_undefined(attention_mask));
  Tensor mask = attention_mask.to(token_embeddings.device(), token_embeddings.dtype()).unsqueeze(-1);
  Tensor summed = sum(token_embeddings * mask, {1});
  Tensor counts = clamp_min(sum(mask, {1}), 1e-9);
  return summed / counts;
}

Tensor l2_normalize(const Tensor& x, double eps) {
  ANVIL_CHECK(x.defined() && x.dim() >= 1, "l2_normalize: expected a tensor of at least 1 dim, got ",
              shape_or_undefined(x));
  return x / clamp_min(norm(x, 2.0, {-1}, true), eps);
}

}  // namespace anvil::nn
