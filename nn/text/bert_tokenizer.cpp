#include "nn/text/bert_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/factory.h"
#include "nn/serialize/json_fields.h"
#include "nn/text/unicode.h"

namespace anvil::nn::text {

namespace {

// The ideograph blocks BERT sets apart. The same ranges as `tokenizers`
// (which starts Extension E at U+2B920, not U+2B820 as Google's BERT does:
// the reference we match is tokenizers).
bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

bool is_normalizer_whitespace(char32_t c) { return c == '\t' || c == '\n' || c == '\r' || is_white_space(c); }

bool is_control(char32_t c) { return c != '\t' && c != '\n' && c != '\r' && is_other(c); }

// ASCII's punctuation includes symbols such as $ + < = > ^ ` | ~ that
// Unicode files under S*; BERT splits on both.
bool is_bert_punctuation(char32_t c) {
  const bool ascii_punct =
      (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  return ascii_punct || is_punctuation(c);
}

std::string read_file(const std::filesystem::path& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  ANVIL_CHECK(in, what, ": cannot open ", path.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

BertTokenizer::BertTokenizer(std::vector<std::string> vocab, BertTokenizerOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  ANVIL_CHECK(!vocab_.empty(), "BertTokenizer: the vocabulary is empty");
  ids_.reserve(vocab_.size());
  for (size_t i = 0; i < vocab_.size(); ++i) ids_.emplace(vocab_[i], static_cast<int64_t>(i));
  ANVIL_CHECK(options_.max_input_chars_per_word > 0, "BertTokenizer: max_input_chars_per_word must be positive, got ",
              options_.max_input_chars_per_word);
  unk_id_ = required_id(options_.unk_token);
  pad_id_ = required_id(options_.pad_token);
  required_id(options_.cls_token);
  required_id(options_.sep_token);
  add_special_tokens({options_.unk_token, options_.cls_token, options_.sep_token, options_.pad_token});
}

int64_t BertTokenizer::required_id(const std::string& token) const {
  auto it = ids_.find(token);
  ANVIL_CHECK(it != ids_.end(), "BertTokenizer: the special token '", token, "' is not in the vocabulary of ",
              vocab_.size(), " pieces");
  return it->second;
}

BertTokenizer BertTokenizer::from_vocab_file(const std::filesystem::path& vocab_txt, BertTokenizerOptions options) {
  std::istringstream lines(read_file(vocab_txt, "BertTokenizer::from_vocab_file"));
  std::vector<std::string> vocab;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    vocab.push_back(line);
  }
  return BertTokenizer(std::move(vocab), std::move(options));
}

BertTokenizer BertTokenizer::from_file(const std::filesystem::path& tokenizer_json) {
  const char* op = "BertTokenizer::from_file";
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(tokenizer_json, op));
  } catch (const nlohmann::json::exception& e) {
    ANVIL_CHECK(false, op, ": ", tokenizer_json.string(), " is not JSON: ", e.what());
  }
  try {
    const auto& model = j.at("model");
    ANVIL_CHECK(model.value("type", "") == "WordPiece", op, ": ", tokenizer_json.string(), " holds a '",
                model.value("type", "?"), "' model; expected WordPiece");
    BertTokenizerOptions o;
    o.unk_token = model.value("unk_token", o.unk_token);
    o.continuing_subword_prefix = model.value("continuing_subword_prefix", o.continuing_subword_prefix);
    const std::string where = std::string(op) + ": " + tokenizer_json.string();
    o.max_input_chars_per_word =
        nn::json_integer_field(model, "max_input_chars_per_word", o.max_input_chars_per_word, where);
    const auto& norm = j.at("normalizer");
    ANVIL_CHECK(norm.is_object() && norm.value("type", "") == "BertNormalizer", op, ": ", tokenizer_json.string(),
                " has no BertNormalizer; expected a BERT tokenizer");
    o.clean_text = norm.value("clean_text", o.clean_text);
    o.handle_chinese_chars = norm.value("handle_chinese_chars", o.handle_chinese_chars);
    o.lowercase = norm.value("lowercase", o.lowercase);
    if (norm.contains("strip_accents") && !norm["strip_accents"].is_null())
      o.strip_accents = norm["strip_accents"].get<bool>();
    // Ids in the file may leave no gap; the vector is indexed by id.
    const auto& map = model.at("vocab");
    std::vector<std::string> vocab(map.size());
    for (auto it = map.begin(); it != map.end(); ++it) {
      const int64_t id = nn::json_integer(it.value(), where + ": the id of '" + it.key() + "'");
      ANVIL_CHECK(id >= 0 && id < static_cast<int64_t>(vocab.size()), op, ": ", tokenizer_json.string(), ": the id ",
                  id, " of '", it.key(), "' is outside 0..", vocab.size() - 1);
      vocab[static_cast<size_t>(id)] = it.key();
    }
    std::vector<std::string> specials;
    if (j.contains("added_tokens"))
      for (const auto& t : j["added_tokens"]) specials.push_back(t.at("content").get<std::string>());
    if (j.contains("truncation") && j["truncation"].is_object())
      o.max_length = nn::json_integer_field(j["truncation"], "max_length", o.max_length, where);
    BertTokenizer tok(std::move(vocab), std::move(o));
    tok.add_special_tokens(specials);
    return tok;
  } catch (const nlohmann::json::exception& e) {
    ANVIL_CHECK(false, op, ": ", tokenizer_json.string(), " is not a tokenizers file as expected: ", e.what());
  }
  throw Error("unreachable");
}

void BertTokenizer::add_special_tokens(const std::vector<std::string>& tokens) {
  for (const std::string& t : tokens) {
    if (t.empty() || std::find(special_tokens_.begin(), special_tokens_.end(), t) != special_tokens_.end()) continue;
    required_id(t);
    special_tokens_.push_back(t);
  }
  std::stable_sort(special_tokens_.begin(), special_tokens_.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

std::u32string BertTokenizer::normalize(std::u32string_view text) const {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (options_.clean_text) {
      if (c == 0 || c == 0xFFFD || is_control(c)) continue;
      if (is_normalizer_whitespace(c)) c = U' ';
    }
    if (options_.handle_chinese_chars && is_chinese_char(c)) {
      out.push_back(U' ');
      out.push_back(c);
      out.push_back(U' ');
    } else {
      out.push_back(c);
    }
  }
  if (options_.strip_accents.value_or(options_.lowercase)) {
    std::u32string decomposed = nfd(out);
    out.clear();
    for (char32_t c : decomposed)
      if (!is_nonspacing_mark(c)) out.push_back(c);
  }
  if (options_.lowercase) {
    std::u32string lower;
    lower.reserve(out.size());
    for (char32_t c : out) append_lowercase(lower, c);
    out = std::move(lower);
  }
  return out;
}

void BertTokenizer::split_words(const std::u32string& text, std::vector<std::u32string>& words) const {
  std::u32string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (char32_t c : text) {
    if (is_white_space(c)) {
      flush();
    } else if (is_bert_punctuation(c)) {
      flush();
      words.emplace_back(1, c);
    } else {
      word.push_back(c);
    }
  }
  flush();
}

void BertTokenizer::word_pieces(const std::u32string& word, std::vector<int64_t>& ids) const {
  if (static_cast<int64_t>(word.size()) > options_.max_input_chars_per_word) {
    ids.push_back(unk_id_);
    return;
  }
  // Byte offsets of each code point, so a candidate piece is one substring.
  const std::string utf8 = code_points_to_utf8(word);
  std::vector<size_t> offsets;
  offsets.reserve(word.size() + 1);
  size_t pos = 0;
  for (char32_t c : word) {
    offsets.push_back(pos);
    pos += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  offsets.push_back(pos);
  const size_t first = ids.size();
  std::string candidate;
  for (size_t start = 0; start < word.size();) {
    int64_t found = -1;
    size_t end = word.size();
    for (; end > start; --end) {
      candidate.assign(start > 0 ? options_.continuing_subword_prefix : std::string());
      candidate.append(utf8, offsets[start], offsets[end] - offsets[start]);
      auto it = ids_.find(candidate);
      if (it != ids_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {  // a part no piece covers: the whole word is unknown
      ids.resize(first);
      ids.push_back(unk_id_);
      return;
    }
    ids.push_back(found);
    start = end;
  }
}

std::vector<int64_t> BertTokenizer::tokenize_ids(std::string_view text) const {
  std::vector<int64_t> ids;
  std::vector<std::u32string> words;
  auto add_segment = [&](std::string_view segment) {
    if (segment.empty()) return;
    words.clear();
    split_words(normalize(utf8_to_code_points(segment)), words);
    for (const auto& w : words) word_pieces(w, ids);
  };
  // Special tokens are matched in the raw text, leftmost then longest.
  size_t segment_start = 0;
  for (size_t i = 0; i < text.size();) {
    const std::string* match = nullptr;
    for (const std::string& t : special_tokens_)
      if (text.compare(i, t.size(), t) == 0) {
        match = &t;
        break;
      }
    if (!match) {
      ++i;
      continue;
    }
    add_segment(text.substr(segment_start, i - segment_start));
    ids.push_back(ids_.at(*match));
    i += match->size();
    segment_start = i;
  }
  add_segment(text.substr(segment_start));
  return ids;
}

std::vector<std::string> BertTokenizer::tokenize(std::string_view text) const {
  std::vector<std::string> pieces;
  for (int64_t id : tokenize_ids(text)) pieces.push_back(vocab_[static_cast<size_t>(id)]);
  return pieces;
}

std::vector<int64_t> BertTokenizer::encode(std::string_view text) const {
  ANVIL_CHECK(options_.max_length >= 2, "BertTokenizer::encode: max_length must leave room for [CLS] and [SEP], got ",
              options_.max_length);
  std::vector<int64_t> body = tokenize_ids(text);
  body.resize(std::min(body.size(), static_cast<size_t>(options_.max_length - 2)));
  std::vector<int64_t> ids;
  ids.reserve(body.size() + 2);
  ids.push_back(ids_.at(options_.cls_token));
  ids.insert(ids.end(), body.begin(), body.end());
  ids.push_back(ids_.at(options_.sep_token));
  return ids;
}

BatchEncoding BertTokenizer::encode_batch(const std::vector<std::string>& texts) const {
  std::vector<std::vector<int64_t>> rows;
  rows.reserve(texts.size());
  size_t longest = 0;
  for (const auto& t : texts) {
    rows.push_back(encode(t));
    longest = std::max(longest, rows.back().size());
  }
  const auto batch = static_cast<int64_t>(texts.size()), length = static_cast<int64_t>(longest);
  std::vector<int64_t> ids(texts.size() * longest, pad_id_), mask(texts.size() * longest, 0);
  for (size_t r = 0; r < rows.size(); ++r) {
    std::copy(rows[r].begin(), rows[r].end(), ids.begin() + static_cast<std::ptrdiff_t>(r * longest));
    std::fill_n(mask.begin() + static_cast<std::ptrdiff_t>(r * longest), rows[r].size(), 1);
  }
  return {from_vector(ids, {batch, length}), from_vector(mask, {batch, length}), zeros({batch, length}, kInt64)};
}

int64_t BertTokenizer::token_to_id(std::string_view token) const {
  auto it = ids_.find(std::string(token));
  return it == ids_.end() ? unk_id_ : it->second;
}

const std::string& BertTokenizer::id_to_token(int64_t id) const {
  ANVIL_CHECK(id >= 0 && id < vocab_size(), "BertTokenizer::id_to_token: id ", id, " is outside 0..", vocab_size() - 1);
  return vocab_[static_cast<size_t>(id)];
}

}  // namespace anvil::nn::text
