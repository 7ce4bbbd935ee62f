// libFuzzer: the BERT tokenizer's readers and its text path
// (nn/text/bert_tokenizer.cpp). The first byte picks the reader:
//   0  the rest is a tokenizer.json
//   1  the rest is a vocab.txt
//   else  the rest is text (any bytes, valid UTF-8 or not) for a fixed
//         vocabulary; every id it gives must be a valid id, [CLS] first and
//         [SEP] last.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/base/error.h"
#include "fuzz/fuzz_input.h"
#include "nn/text/bert_tokenizer.h"

using anvil::nn::text::BertTokenizer;

namespace {

const BertTokenizer& fixed_tokenizer() {
  static const BertTokenizer tok = [] {
    BertTokenizer t(
        {"[PAD]", "[UNK]", "[CLS]", "[SEP]",        "[MASK]",      "a",   "b",   "c",   "e",     "h",     "l",
         "o",     "r",     "w",     "##a",          "##b",         "##e", "##l", "##o", "hello", "world", "cafe",
         "##s",   ",",     "!",     "\xe4\xb8\xad", "\xe6\x96\x87"});
    t.add_special_tokens({"[MASK]"});
    t.options().max_length = 64;
    return t;
  }();
  return tok;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  ++data, --size;
  try {
    if (mode == 0) {
      const BertTokenizer t = BertTokenizer::from_file(anvil::fuzz::write_input(data, size, ".json"));
      (void)t.encode("Hello, world!");
    } else if (mode == 1) {
      const BertTokenizer t = BertTokenizer::from_vocab_file(anvil::fuzz::write_input(data, size, ".txt"));
      (void)t.encode("Hello, world!");
    } else {
      const BertTokenizer& t = fixed_tokenizer();
      const std::vector<int64_t> ids = t.encode(std::string_view(reinterpret_cast<const char*>(data), size));
      if (ids.size() < 2 || ids.front() != 2 || ids.back() != 3 || ids.size() > 64) std::abort();
      for (int64_t id : ids)
        if (id < 0 || id >= t.vocab_size()) std::abort();
    }
  } catch (const anvil::Error&) {
  }
  return 0;
}
