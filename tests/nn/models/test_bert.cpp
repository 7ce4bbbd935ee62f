// nn::BertModel and nn::SentenceEmbedder: PyTorch's key names, load errors,
// padding invariance and gradients on a tiny random BERT; then
// all-MiniLM-L6-v2 against sentence-transformers' embeddings
// (fixtures/minilm_embeddings.json, written by bench/pytorch/minilm_reference.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/ops.h"
#include "nn/models/bert.h"
#include "nn/models/sentence_embedder.h"
#include "nn/serialize/safetensors.h"
#include "tests/core/gradcheck.h"
#include "tests/nn/layers/layer_test_util.h"
#include "tests/nn/models/minilm_dir.h"

namespace anvil::nn {
namespace {

namespace fs = std::filesystem;

BertConfig tiny_config() {
  BertConfig c;
  c.vocab_size = 20;
  c.hidden_size = 8;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 12;
  c.max_position_embeddings = 16;
  return c;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
}

// One folder per test process, removed when the process exits (a static's
// destructor), so repeated runs leave nothing behind in /tmp.
struct ScratchFolder {
  fs::path dir = fs::temp_directory_path() / ("anvil_test_bert_" + std::to_string(::getpid()));
  ~ScratchFolder() {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
};

fs::path scratch(const std::string& name) {
  static ScratchFolder folder;
  fs::create_directories(folder.dir);
  return folder.dir / name;
}

TEST(BertModel, StateDictKeysArePyTorchs) {
  BertConfig c = tiny_config();
  c.num_hidden_layers = 1;
  BertModel model(c);
  std::vector<std::string> names;
  for (auto& [n, t] : model.state_dict()) names.push_back(n);
  std::sort(names.begin(), names.end());
  // transformers' BertModel(config).state_dict().keys(), sorted, for one layer.
  const std::vector<std::string> expected = {"embeddings.LayerNorm.bias",
                                             "embeddings.LayerNorm.weight",
                                             "embeddings.position_embeddings.weight",
                                             "embeddings.position_ids",
                                             "embeddings.token_type_embeddings.weight",
                                             "embeddings.word_embeddings.weight",
                                             "encoder.layer.0.attention.output.LayerNorm.bias",
                                             "encoder.layer.0.attention.output.LayerNorm.weight",
                                             "encoder.layer.0.attention.output.dense.bias",
                                             "encoder.layer.0.attention.output.dense.weight",
                                             "encoder.layer.0.attention.self.key.bias",
                                             "encoder.layer.0.attention.self.key.weight",
                                             "encoder.layer.0.attention.self.query.bias",
                                             "encoder.layer.0.attention.self.query.weight",
                                             "encoder.layer.0.attention.self.value.bias",
                                             "encoder.layer.0.attention.self.value.weight",
                                             "encoder.layer.0.intermediate.dense.bias",
                                             "encoder.layer.0.intermediate.dense.weight",
                                             "encoder.layer.0.output.LayerNorm.bias",
                                             "encoder.layer.0.output.LayerNorm.weight",
                                             "encoder.layer.0.output.dense.bias",
                                             "encoder.layer.0.output.dense.weight",
                                             "pooler.dense.bias",
                                             "pooler.dense.weight"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(model.embeddings->position_ids.to_vector<int64_t>()[5], 5);
}

TEST(BertModel, LoadErrorsNameTheFileAndEveryBadTensor) {
  manual_seed(3);
  BertModel model(tiny_config());
  StateDict good = model.state_dict();
  auto with = [&](const std::function<void(StateDict&)>& edit) {
    StateDict s = good;
    edit(s);
    fs::path p = scratch("edited.safetensors");
    serialize::save_safetensors(p, s);
    return error_of([&] { BertModel(tiny_config()).load_safetensors(p); });
  };
  std::string missing = with(
      [](StateDict& s) { std::erase_if(s, [](auto& kv) { return kv.first == "encoder.layer.1.output.dense.bias"; }); });
  EXPECT_NE(missing.find("edited.safetensors"), std::string::npos) << missing;
  EXPECT_NE(missing.find("missing keys: encoder.layer.1.output.dense.bias"), std::string::npos) << missing;
  std::string unexpected = with([](StateDict& s) { s.emplace_back("encoder.layer.2.output.dense.bias", zeros({8})); });
  EXPECT_NE(unexpected.find("unexpected keys: encoder.layer.2.output.dense.bias"), std::string::npos) << unexpected;
  std::string shape = with([](StateDict& s) {
    for (auto& [n, t] : s)
      if (n == "embeddings.word_embeddings.weight") t = zeros({21, 8});
  });
  EXPECT_NE(shape.find("embeddings.word_embeddings.weight (checkpoint [21, 8], model [20, 8])"), std::string::npos)
      << shape;
  std::string dtype = with([](StateDict& s) {
    for (auto& [n, t] : s)
      if (n == "pooler.dense.bias") t = zeros({8}, kInt32);
  });
  EXPECT_NE(dtype.find("pooler.dense.bias (int32)"), std::string::npos) << dtype;

  // Without position_ids (newer transformers do not save the buffer) the file still loads.
  std::string none =
      with([](StateDict& s) { std::erase_if(s, [](auto& kv) { return kv.first == "embeddings.position_ids"; }); });
  EXPECT_EQ(none, "");
  // And the loaded model computes what the saved one does.
  fs::path p = scratch("good.safetensors");
  serialize::save_safetensors(p, good);
  BertModel loaded(tiny_config());
  loaded.load_safetensors(p);
  model.eval();
  loaded.eval();
  Tensor ids = randint(0, 20, {2, 5});
  EXPECT_EQ(max_abs_diff(model.forward(ids), loaded.forward(ids)), 0.0);
  EXPECT_NE(error_of([] { BertModel::from_pretrained("/nonexistent"); }).find("no model.safetensors in /nonexistent"),
            std::string::npos);
}

TEST(BertModel, PaddingChangesNothingForTheRealTokens) {
  manual_seed(4);
  auto model = std::make_shared<BertModel>(tiny_config());
  model->eval();
  NoGradGuard no_grad;
  Tensor alone = from_vector<int64_t>({2, 7, 9, 3}, {1, 4});
  Tensor batch = from_vector<int64_t>({2, 7, 9, 3, 0, 0, 2, 5, 6, 11, 12, 3}, {2, 6});
  Tensor mask = from_vector<int64_t>({1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1}, {2, 6});
  Tensor h1 = model->forward(alone, Tensor()).last_hidden_state;
  BertOutput out = model->forward(batch, mask);
  Tensor h2 = out.last_hidden_state.slice(0, 0, 1).slice(1, 0, 4);
  EXPECT_LE(max_abs_diff(h1, h2), 1e-6);
  // Padding left out of the mean: the pooled rows agree too.
  Tensor p1 = mean_pooling(h1, ones({1, 4}, kInt64));
  Tensor p2 = mean_pooling(out.last_hidden_state, mask).slice(0, 0, 1);
  EXPECT_LE(max_abs_diff(p1, p2), 1e-6);
  EXPECT_EQ(out.pooler_output.shape(), (Shape{2, 8}));
  // Token types change the result (their embedding is added).
  Tensor types = ones({1, 4}, kInt64);
  EXPECT_GT(max_abs_diff(model->forward(alone, Tensor(), types).last_hidden_state, h1), 1e-3);
}

TEST(BertModel, BadInputsAreClearErrors) {
  BertModel model(tiny_config());
  EXPECT_NE(error_of([&] {
              model.forward(zeros({2, 3}));
            }).find("expected input_ids int64 [batch, length]"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              model.forward(zeros({1, 17}, kInt64));
            }).find("max_position_embeddings 16"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              model.forward(zeros({2, 3}, kInt64), ones({2, 4}, kInt64));
            }).find("attention_mask of input_ids' shape [2, 3], got [2, 4]"),
            std::string::npos);
  BertConfig bad = tiny_config();
  bad.num_attention_heads = 3;
  EXPECT_NE(error_of([&] { BertModel m(bad); }).find("not a multiple of num_attention_heads 3"), std::string::npos);
}

TEST(BertModel, GradientsMatchFiniteDifferences) {
  manual_seed(5);
  BertConfig c = tiny_config();
  c.num_hidden_layers = 1;
  c.vocab_size = 6;
  c.hidden_size = 4;
  c.intermediate_size = 6;
  c.max_position_embeddings = 4;
  auto model = std::make_shared<BertModel>(c);
  model->to(kFloat64);
  model->eval();  // no dropout: deterministic
  // A wrapper whose forward is the pooled, normalized sentence vector of a
  // padded batch, so mean_pooling and l2_normalize are in the graph too.
  struct Pooled : Module {
    std::shared_ptr<BertModel> bert;
    Tensor mask = from_vector<int64_t>({1, 1, 1, 1, 1, 0}, {2, 3});
    explicit Pooled(std::shared_ptr<BertModel> m) : bert(register_module("bert", std::move(m))) {}
    Tensor forward(const Tensor& ids) override {
      return l2_normalize(mean_pooling(bert->forward(ids, mask).last_hidden_state, mask));
    }
  } pooled(model);
  EXPECT_TRUE(testing::module_gradcheck(pooled, from_vector<int64_t>({2, 4, 3, 2, 5, 0}, {2, 3})));
}

TEST(BertModel, MeanPoolingAndNormalizeAsSentenceTransformers) {
  Tensor h = randn({2, 3, 4}, kFloat64);
  Tensor mask = from_vector<int64_t>({1, 1, 0, 0, 0, 0}, {2, 3});
  Tensor pooled = mean_pooling(h, mask);
  EXPECT_LE(max_abs_diff(pooled.select(0, 0), (h.select(0, 0).select(0, 0) + h.select(0, 0).select(0, 1)) / 2.0),
            1e-15);
  EXPECT_EQ(pooled.select(0, 1).abs().sum().item<double>(), 0.0);  // no token: zeros, as the reference's 1e-9 clamp
  Tensor n = l2_normalize(pooled);
  EXPECT_NEAR(norm(n.select(0, 0)).item<double>(), 1.0, 1e-12);
  EXPECT_EQ(n.select(0, 1).abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(
      testing::gradcheck([&](const std::vector<Tensor>& in) { return l2_normalize(mean_pooling(in[0], mask)); }, {h}));
  EXPECT_NE(error_of([&] { mean_pooling(h, ones({2, 4}, kInt64)); }).find("mean_pooling: expected"), std::string::npos);
}

// The real model against sentence-transformers, float32 on the CPU.
TEST(BertMiniLM, EmbeddingsMatchSentenceTransformers) {
  if (!testing::minilm_present()) return;
  SentenceEmbedder model(testing::minilm_dir());
  EXPECT_EQ(model.dimension(), 384);
  EXPECT_EQ(model.max_seq_length(), 256);
  EXPECT_TRUE(model.normalizes());
  const auto fixture = testing::read_json(fs::path(__FILE__).parent_path() / "fixtures/minilm_embeddings.json");
  const auto sentences = fixture["sentences"].get<std::vector<std::string>>();
  const auto expected = fixture["embeddings"].get<std::vector<std::vector<float>>>();
  // As the reference ran: one batch, in input order.
  Tensor e = model.encode(sentences, {.batch_size = static_cast<int64_t>(sentences.size()), .sort_by_length = false});
  ASSERT_EQ(e.shape(), (Shape{static_cast<int64_t>(sentences.size()), 384}));
  auto got = e.cpu().to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i)
    for (size_t j = 0; j < 384; ++j) worst = std::max(worst, std::abs(double(got[i * 384 + j]) - expected[i][j]));
  EXPECT_LE(worst, 1e-5) << "largest difference from sentence-transformers";
  RecordProperty("max_abs_diff", ::testing::PrintToString(worst));
  // Batches of 3 sorted by length (other padding, other order) give the same rows.
  Tensor sorted = model.encode(sentences, {.batch_size = 3});
  EXPECT_LE(max_abs_diff(sorted, e), 1e-5);
}

// bfloat16 weights and activations (8 bits of mantissa). The stated
// tolerance: each component within 0.01 of the float32 reference (they are
// about 0.05 in size; measured 0.0021) and every embedding pointing the same
// way, cosine > 0.999 (measured 0.99993).
TEST(BertMiniLM, Bfloat16StaysCloseToTheReference) {
  if (!testing::minilm_present()) return;
  SentenceEmbedder model(testing::minilm_dir());
  model.to(kBFloat16);
  const auto fixture = testing::read_json(fs::path(__FILE__).parent_path() / "fixtures/minilm_embeddings.json");
  const auto sentences = fixture["sentences"].get<std::vector<std::string>>();
  const auto expected = fixture["embeddings"].get<std::vector<std::vector<float>>>();
  Tensor e = model.encode(sentences);
  EXPECT_EQ(e.dtype(), kFloat32);
  auto got = e.cpu().to_vector<float>();
  double worst = 0, worst_cos = 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    double dot = 0;
    for (size_t j = 0; j < 384; ++j) {
      worst = std::max(worst, std::abs(double(got[i * 384 + j]) - expected[i][j]));
      dot += double(got[i * 384 + j]) * expected[i][j];
    }
    worst_cos = std::min(worst_cos, dot);
  }
  RecordProperty("max_abs_diff", ::testing::PrintToString(worst));
  RecordProperty("min_cosine", ::testing::PrintToString(worst_cos));
  EXPECT_LE(worst, 0.01);
  EXPECT_GE(worst_cos, 0.999);
}

}  // namespace
}  // namespace anvil::nn
