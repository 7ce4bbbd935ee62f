#pragma once
/// @file
/// BERT's WordPiece tokenizer, as HuggingFace `tokenizers` runs it from a
/// model's tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece and the
/// [CLS] A [SEP] template):
///
///     1. special tokens written in the text ("[MASK]") are matched first, as is;
///     2. the rest is normalized: control characters dropped and whitespace made
///        a space, CJK ideographs set apart by spaces, accents stripped (NFD, then
///        non-spacing marks dropped) and lower-cased;
///     3. split on whitespace, every punctuation character a word of its own;
///     4. each word becomes its longest vocabulary pieces from the left ("##" on
///        the pieces after the first), or [UNK] when a part matches nothing or
///        the word is longer than max_input_chars_per_word.
///
///     auto tok = nn::text::BertTokenizer::from_file(dir / "tokenizer.json");
///     tok.options().max_length = 256;
///     nn::text::BatchEncoding b = tok.encode_batch({"Hello, world!", "Crème brûlée"});
///     // b.input_ids, b.attention_mask, b.token_type_ids: int64 [2, longest]
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"

namespace anvil::nn::text {

/// BertTokenizer's settings, as tokenizer.json's normalizer and model sections give them.
struct BertTokenizerOptions {
  bool clean_text = true;  ///< drop control characters, map whitespace to ' '
  bool handle_chinese_chars = true;  ///< a space either side of each CJK ideograph
  std::optional<bool> strip_accents;  ///< unset: as lowercase (BERT's rule)
  bool lowercase = true;  ///< lower-case the text
  ///@{
  /// the special tokens: unknown, the sequence start, the separator and the padding
  std::string unk_token = "[UNK]", cls_token = "[CLS]", sep_token = "[SEP]", pad_token = "[PAD]";
  ///@}
  std::string continuing_subword_prefix = "##";  ///< marks the pieces after a word's first
  int64_t max_input_chars_per_word = 100;  ///< longer words become [UNK]
  /// Encodings longer than this (special tokens included) are cut at the end.
  int64_t max_length = 512;
};

/// A batch padded on the right to its longest encoding; int64 [batch, length].
struct BatchEncoding {
  Tensor input_ids;  ///< token ids, [CLS] ... [SEP] then padding
  Tensor attention_mask;  ///< 1 for tokens, 0 for padding
  Tensor token_type_ids;  ///< zeros: one sequence per row
};

/// BERT's WordPiece tokenizer (see the file comment).
class BertTokenizer {
 public:
  /// The vocabulary in id order (vocab.txt's lines).
  BertTokenizer(std::vector<std::string> vocab, BertTokenizerOptions options = {});
  /// A tokenizer.json whose model is WordPiece and whose normalizer is
  /// BertNormalizer (what BertTokenizerFast saves); its special tokens
  /// ("added_tokens") are matched in the text.
  static BertTokenizer from_file(const std::filesystem::path& tokenizer_json);
  /// A vocab.txt, one piece per line, id = line number.
  static BertTokenizer from_vocab_file(const std::filesystem::path& vocab_txt, BertTokenizerOptions options = {});

  /// The pieces of `text`, without special tokens or truncation.
  std::vector<std::string> tokenize(std::string_view text) const;
  /// [CLS] pieces [SEP] as ids, truncated to options().max_length.
  std::vector<int64_t> encode(std::string_view text) const;
  /// Encodes each text and pads them to the longest, with the attention mask.
  BatchEncoding encode_batch(const std::vector<std::string>& texts) const;

  int64_t token_to_id(std::string_view token) const;  ///< unk id when absent
  const std::string& id_to_token(int64_t id) const;  ///< checked
  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }  ///< Number of tokens in the vocabulary.
  int64_t pad_id() const { return pad_id_; }  ///< The [PAD] id.
  BertTokenizerOptions& options() { return options_; }  ///< The settings, to change (max_length, ...).
  const BertTokenizerOptions& options() const { return options_; }  ///< The settings.
  /// Texts matched as one token before normalization ([MASK], ...).
  void add_special_tokens(const std::vector<std::string>& tokens);

 private:
  std::u32string normalize(std::u32string_view text) const;
  void split_words(const std::u32string& normalized, std::vector<std::u32string>& words) const;
  void word_pieces(const std::u32string& word, std::vector<int64_t>& ids) const;
  std::vector<int64_t> tokenize_ids(std::string_view text) const;
  int64_t required_id(const std::string& token) const;

  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<std::string> special_tokens_;  ///< longest first, so "[MASK]" beats a prefix of it
  BertTokenizerOptions options_;
  int64_t unk_id_ = 0, pad_id_ = 0;
};

}  // namespace anvil::nn::text
