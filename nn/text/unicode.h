#pragma once
// The Unicode character data BERT's tokenizer needs, from ICU (Debian:
// libicu-dev) so no table is hand-written here: general categories,
// White_Space, lower-case mappings and canonical decomposition (NFD).
// Text is held as code points (std::u32string) between UTF-8 edges.
#include <string>
#include <string_view>

namespace anvil::nn::text {

// UTF-8 -> code points; an invalid byte sequence becomes U+FFFD, as Python's
// and Rust's lossy decoders do.
std::u32string utf8_to_code_points(std::string_view utf8);
std::string code_points_to_utf8(std::u32string_view cps);
void append_utf8(std::string& out, char32_t c);

bool is_white_space(char32_t c);  // the White_Space property (Rust's char::is_whitespace)
bool is_punctuation(char32_t c);  // general category P* (Pc Pd Ps Pe Pi Pf Po)
bool is_nonspacing_mark(char32_t c);  // general category Mn
bool is_other(char32_t c);  // general category C* (Cc Cf Cs Co Cn)
std::u32string nfd(std::u32string_view cps);  // canonical decomposition, canonically ordered
// The full lower-case mapping (SpecialCasing's one unconditional
// multi-character lower case, U+0130, included); no context (final sigma).
void append_lowercase(std::u32string& out, char32_t c);

}  // namespace anvil::nn::text
