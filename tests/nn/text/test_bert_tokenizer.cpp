// nn::text::BertTokenizer: each normalizer / pre-tokenizer / WordPiece rule on
// a small vocabulary, then all-MiniLM-L6-v2's tokenizer against the ids
// HuggingFace's tokenizer gives (fixtures/minilm_tokenizer.json, written by
// bench/pytorch/minilm_reference.py).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/ops.h"
#include "nn/text/bert_tokenizer.h"
#include "tests/nn/models/minilm_dir.h"

namespace anvil::nn::text {
namespace {

using Pieces = std::vector<std::string>;

BertTokenizer small_tokenizer(BertTokenizerOptions o = {}) {
  return BertTokenizer({"[PAD]", "[UNK]",    "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "hello", "world",
                        "!",     ",",        "cafe",  "北",    "京",     "a",  "##a",   "ab",     "##b",   "$",
                        "i",     "istanbul", "σ",     "##α",   "##σ",    "ᄒ", "##ᅡ",  "##ᆫ"},
                       std::move(o));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BertTokenizer, GreedyLongestPiecesFromTheLeft) {
  auto tok = small_tokenizer();
  EXPECT_EQ(tok.tokenize("unaffable"), (Pieces{"un", "##aff", "##able"}));
  EXPECT_EQ(tok.tokenize("abb aaa"), (Pieces{"ab", "##b", "a", "##a", "##a"}));
  // One part no piece covers makes the whole word unknown.
  EXPECT_EQ(tok.tokenize("unaffablex hello"), (Pieces{"[UNK]", "hello"}));
}

TEST(BertTokenizer, LowerCasesStripsAccentsAndSplitsPunctuation) {
  auto tok = small_tokenizer();
  EXPECT_EQ(tok.tokenize("Hello,World!"), (Pieces{"hello", ",", "world", "!"}));
  EXPECT_EQ(tok.tokenize("CAFÉ Café cafe\u0301"), (Pieces{"cafe", "cafe", "cafe"}));
  EXPECT_EQ(tok.tokenize("İstanbul"), (Pieces{"istanbul"}));  // I + dot above: the mark goes
  EXPECT_EQ(tok.tokenize("ΣΑΣ"), (Pieces{"σ", "##α", "##σ"}));  // no final-sigma rule
  EXPECT_EQ(tok.tokenize("$"), (Pieces{"$"}));  // ASCII symbols split as punctuation
  EXPECT_EQ(tok.tokenize("hello$world"), (Pieces{"hello", "$", "world"}));
  EXPECT_EQ(tok.tokenize("한"), (Pieces{"ᄒ", "##ᅡ", "##ᆫ"}));  // Hangul syllables decompose (NFD)
}

TEST(BertTokenizer, CleansControlsAndWhitespaceAndSetsIdeographsApart) {
  auto tok = small_tokenizer();
  EXPECT_EQ(tok.tokenize("hello\tworld\n\r\u3000hello"), (Pieces{"hello", "world", "hello"}));
  EXPECT_EQ(tok.tokenize("hel\u0007lo wor\u200bld"), (Pieces{"hello", "world"}));
  EXPECT_EQ(tok.tokenize("北京hello"), (Pieces{"北", "京", "hello"}));
  EXPECT_EQ(tok.tokenize(""), Pieces{});
  EXPECT_EQ(tok.tokenize(" \t\n "), Pieces{});
  // Invalid UTF-8 reads as U+FFFD, which the cleaner drops.
  EXPECT_EQ(tok.tokenize("hel\xfflo"), (Pieces{"hello"}));
}

TEST(BertTokenizer, OptionsTurnRulesOff) {
  BertTokenizerOptions o;
  o.lowercase = false;
  auto cased = small_tokenizer(o);
  EXPECT_EQ(cased.tokenize("Hello hello"), (Pieces{"[UNK]", "hello"}));
  EXPECT_EQ(cased.tokenize("cafe\u0301"), (Pieces{"[UNK]"}));  // no lowercase: no accent stripping either
  o.lowercase = true;
  o.strip_accents = false;
  EXPECT_EQ(small_tokenizer(o).tokenize("café cafe"), (Pieces{"[UNK]", "cafe"}));
  o = {};
  o.handle_chinese_chars = false;
  EXPECT_EQ(small_tokenizer(o).tokenize("北京"), (Pieces{"[UNK]"}));
}

TEST(BertTokenizer, WordsPastMaxInputCharsAreUnknown) {
  BertTokenizerOptions o;
  o.max_input_chars_per_word = 4;
  auto tok = small_tokenizer(o);
  EXPECT_EQ(tok.tokenize("aaaa aaaaa"), (Pieces{"a", "##a", "##a", "##a", "[UNK]"}));
}

TEST(BertTokenizer, SpecialTokensInTheTextAreMatchedBeforeNormalizing) {
  auto tok = small_tokenizer();
  tok.add_special_tokens({"[MASK]"});
  EXPECT_EQ(tok.tokenize("hello [MASK]world [mask]"), (Pieces{"hello", "[MASK]", "world", "[UNK]", "[UNK]", "[UNK]"}));
  EXPECT_EQ(tok.tokenize("[CLS][SEP]"), (Pieces{"[CLS]", "[SEP]"}));
}

TEST(BertTokenizer, EncodeAddsClsSepAndTruncates) {
  auto tok = small_tokenizer();
  EXPECT_EQ(tok.encode("hello world"), (std::vector<int64_t>{2, 8, 9, 3}));
  EXPECT_EQ(tok.encode(""), (std::vector<int64_t>{2, 3}));
  tok.options().max_length = 4;
  EXPECT_EQ(tok.encode("hello world ! ,"), (std::vector<int64_t>{2, 8, 9, 3}));
  tok.options().max_length = 1;
  EXPECT_NE(error_of([&] { tok.encode("hello"); }).find("max_length"), std::string::npos);
}

TEST(BertTokenizer, BatchesArePaddedOnTheRightWithAMask) {
  auto tok = small_tokenizer();
  BatchEncoding b = tok.encode_batch({"hello", "hello world !", ""});
  EXPECT_EQ(b.input_ids.shape(), (Shape{3, 5}));
  EXPECT_EQ(b.input_ids.dtype(), kInt64);
  EXPECT_EQ(b.input_ids.to_vector<int64_t>(), (std::vector<int64_t>{2, 8, 3, 0, 0, 2, 8, 9, 10, 3, 2, 3, 0, 0, 0}));
  EXPECT_EQ(b.attention_mask.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(b.token_type_ids.sum().item<int64_t>(), 0);
  EXPECT_EQ(b.token_type_ids.shape(), (Shape{3, 5}));
}

TEST(BertTokenizer, BadVocabulariesAndIdsAreClearErrors) {
  EXPECT_NE(error_of([] { BertTokenizer({"a", "b"}); }).find("'[UNK]' is not in the vocabulary"), std::string::npos);
  EXPECT_NE(error_of([] { BertTokenizer(std::vector<std::string>{}); }).find("empty"), std::string::npos);
  auto tok = small_tokenizer();
  EXPECT_NE(error_of([&] { tok.id_to_token(999); }).find("id 999"), std::string::npos);
  EXPECT_EQ(tok.token_to_id("nope"), 1);
  EXPECT_NE(error_of([] { BertTokenizer::from_file("/nonexistent/tokenizer.json"); }).find("cannot open"),
            std::string::npos);
}

// Numbers of the wrong JSON type: nlohmann would cast a float id of 3e29 to
// int64 (undefined behaviour; fuzz_tokenizer's first find, now in
// fuzz/corpus/tokenizer/), so the reader checks the type and names the field.
TEST(BertTokenizer, NonIntegerNumbersInTokenizerJsonAreClearErrors) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("anvil_tokenizer_numbers_" + std::to_string(::getpid()) + ".json");
  auto from_text = [&](const std::string& vocab_sep, const std::string& max_length) {
    std::ofstream(path) << R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {"[PAD]": 0, "[UNK]": 1,)"
                        << R"("[CLS]": 2, "[SEP]": )" << vocab_sep << R"(, "hello": 4}},)"
                        << R"("normalizer": {"type": "BertNormalizer", "lowercase": true},)"
                        << R"("truncation": {"max_length": )" << max_length << "}}";
    return error_of([&] { BertTokenizer::from_file(path); });
  };
  EXPECT_EQ(from_text("3", "16"), "");
  std::string e = from_text("344444444444444444444444444444", "16");
  EXPECT_NE(e.find("the id of '[SEP]' must be an integer"), std::string::npos) << e;
  e = from_text("3.5", "16");
  EXPECT_NE(e.find("must be an integer, got 3.5"), std::string::npos) << e;
  e = from_text("3", "1e300");
  EXPECT_NE(e.find("'max_length' must be an integer"), std::string::npos) << e;
  EXPECT_NE(e.find(path.string()), std::string::npos) << e;
  std::filesystem::remove(path);
}

// The model's own files against HuggingFace's tokenizer.
TEST(BertTokenizerMiniLM, IdsEqualTheReferenceTokenizers) {
  if (!testing::minilm_present()) return;
  auto tok = BertTokenizer::from_file(testing::minilm_dir() / "tokenizer.json");
  EXPECT_EQ(tok.vocab_size(), 30522);
  const auto fixture =
      testing::read_json(std::filesystem::path(__FILE__).parent_path() / "fixtures/minilm_tokenizer.json");
  tok.options().max_length = fixture["max_length"].get<int64_t>();
  const auto texts = fixture["texts"].get<std::vector<std::string>>();
  const auto expected = fixture["ids"].get<std::vector<std::vector<int64_t>>>();
  ASSERT_EQ(texts.size(), expected.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int64_t> ids = tok.encode(texts[i]);
    if (ids == expected[i]) continue;
    std::string got, want;
    for (int64_t id : ids) got += tok.id_to_token(id) + " ";
    for (int64_t id : expected[i]) want += tok.id_to_token(id) + " ";
    ADD_FAILURE() << "text " << i << " '" << texts[i] << "'\n  anvil:     " << got << "\n  reference: " << want;
  }
  // The whole corpus as one batch: padded to the longest (the truncated text).
  BatchEncoding b = tok.encode_batch(texts);
  EXPECT_EQ(b.input_ids.size(1), fixture["padded_length"].get<int64_t>());
  auto mask = b.attention_mask.sum({1}).to_vector<int64_t>();
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(mask[i], static_cast<int64_t>(expected[i].size())) << i;
}

}  // namespace
}  // namespace anvil::nn::text
