// SentenceEmbedder::save: a changed all-MiniLM-L6-v2 written as a
// sentence-transformers folder loads back (here; bench/pytorch/
// check_finetuned_minilm.py loads it with SentenceTransformer) as the same
// model, not the one it came from.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/autograd/grad_mode.h"
#include "core/ops.h"
#include "core/random.h"
#include "nn/models/sentence_embedder.h"
#include "nn/serialize/safetensors.h"
#include "tests/nn/layers/layer_test_util.h"
#include "tests/nn/models/minilm_dir.h"

namespace anvil::nn {
namespace {

namespace fs = std::filesystem;

struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("anvil_test_embedder_save_" + std::to_string(::getpid()));
  ScratchDir() { fs::remove_all(path); }
  ~ScratchDir() { fs::remove_all(path); }
};

const std::vector<std::string> kTexts = {"A man is eating food.", "The girl is carrying a baby.",
                                         "Computers make very fast, very accurate mistakes."};

double max_abs_diff(const Tensor& a, const Tensor& b) { return (a - b).abs().max().item<double>(); }

TEST(SentenceEmbedderSave, TheSavedFolderLoadsBackAsTheChangedModel) {
  if (!testing::minilm_present()) return;
  SentenceEmbedder model(testing::minilm_dir());
  const Tensor original = model.encode(kTexts);
  {
    // What a fine-tune does, in miniature: change weights of several kinds.
    NoGradGuard no_grad;
    manual_seed(3);
    for (auto& [name, p] : model.model()->named_parameters())
      if (name.find("encoder.layer.5.") == 0 || name == "embeddings.word_embeddings.weight")
        p.add_(randn(p.shape()) * 0.01);
  }
  const Tensor changed = model.encode(kTexts);
  ASSERT_GT(max_abs_diff(changed, original), 1e-3);

  ScratchDir scratch;
  const fs::path dir = scratch.path / "tuned";
  model.save(dir);
  for (const char* file : {"model.safetensors", "config.json", "tokenizer.json", "vocab.txt", "modules.json",
                           "sentence_bert_config.json", "1_Pooling/config.json"})
    EXPECT_TRUE(fs::exists(dir / file)) << file;
  EXPECT_FALSE(fs::exists(dir / "README.md"));  // the source's model card describes the source
  // PyTorch's key names and dtypes, as the source file has them (position_ids included).
  const auto saved = serialize::load_safetensors_with_metadata(dir / "model.safetensors");
  const auto source = serialize::load_safetensors(testing::minilm_dir() / "model.safetensors");
  ASSERT_EQ(saved.tensors.size(), source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    EXPECT_EQ(saved.tensors[i].first, source[i].first);
    EXPECT_EQ(saved.tensors[i].second.dtype(), source[i].second.dtype()) << source[i].first;
    EXPECT_EQ(saved.tensors[i].second.shape(), source[i].second.shape()) << source[i].first;
  }
  EXPECT_EQ(saved.metadata.at("format"), "pt");

  SentenceEmbedder loaded(dir);
  EXPECT_EQ(loaded.max_seq_length(), model.max_seq_length());
  EXPECT_TRUE(loaded.normalizes());
  EXPECT_EQ(max_abs_diff(loaded.encode(kTexts), changed), 0.0);  // the same weights, the same ops
  // Saving over an earlier save replaces it.
  model.save(dir);
  EXPECT_EQ(max_abs_diff(SentenceEmbedder(dir).encode(kTexts), changed), 0.0);
}

TEST(SentenceEmbedderSave, MaxSeqLengthTruncatesAndBadUseIsAClearError) {
  if (!testing::minilm_present()) return;
  SentenceEmbedder model(testing::minilm_dir());
  const std::string text = "the quick brown fox jumps over the lazy dog and keeps running far away";
  const Tensor full = model.encode({text});
  model.set_max_seq_length(8);
  EXPECT_EQ(model.max_seq_length(), 8);
  EXPECT_EQ(model.tokenizer().encode(text).size(), 8u);
  // What lies past the 8th token no longer counts.
  const Tensor cut = model.encode({text});
  EXPECT_EQ(max_abs_diff(cut, model.encode({text + " through the fields of golden wheat"})), 0.0);
  EXPECT_GT(max_abs_diff(cut, full), 1e-3);
  testing::expect_error([&] { model.set_max_seq_length(1); }, {"set_max_seq_length", "2..512", "got 1"});
  testing::expect_error([&] { model.set_max_seq_length(513); }, {"set_max_seq_length", "got 513"});
  testing::expect_error([&] { model.save(testing::minilm_dir()); }, {"SentenceEmbedder::save", "loaded from"});
}

}  // namespace
}  // namespace anvil::nn
