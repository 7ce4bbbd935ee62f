#include "nn/text/unicode.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/utf16.h>

#include <vector>

#include "core/base/error.h"

namespace anvil::nn::text {

std::u32string utf8_to_code_points(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char b = p[i];
    int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    char32_t c = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
    bool ok = len > 0 && i + static_cast<size_t>(len) <= n;
    for (int k = 1; ok && k < len; ++k) {
      ok = (p[i + static_cast<size_t>(k)] & 0xC0) == 0x80;
      c = (c << 6) | (p[i + static_cast<size_t>(k)] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid too.
    static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && c >= kMin[len] && c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF);
    if (!ok) {
      out.push_back(0xFFFD);
      i += 1;
      continue;
    }
    out.push_back(c);
    i += static_cast<size_t>(len);
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string code_points_to_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) append_utf8(out, c);
  return out;
}

bool is_white_space(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }

bool is_punctuation(char32_t c) { return u_ispunct(static_cast<UChar32>(c)); }

bool is_nonspacing_mark(char32_t c) { return u_charType(static_cast<UChar32>(c)) == U_NON_SPACING_MARK; }

bool is_other(char32_t c) {
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_UNASSIGNED:  // Cn
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
      return true;
    default:
      return false;
  }
}

std::u32string nfd(std::u32string_view cps) {
  // ICU normalizes UTF-16.
  std::vector<UChar> in;
  in.reserve(cps.size());
  for (char32_t c : cps) {
    UChar units[2];
    int32_t len = 0;
    UBool error = false;
    U16_APPEND(units, len, 2, static_cast<UChar32>(c), error);
    ANVIL_CHECK(!error, "nfd: U+", static_cast<uint32_t>(c), " is not a Unicode scalar value");
    in.insert(in.end(), units, units + len);
  }
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* normalizer = unorm2_getNFDInstance(&status);
  ANVIL_CHECK(U_SUCCESS(status), "nfd: ICU has no NFD normalizer (", u_errorName(status), ")");
  // A first guess at the decomposed length; ICU reports the length it needs
  // when the guess is short.
  std::vector<UChar> out(in.size() * 2 + 16);
  int32_t len = unorm2_normalize(normalizer, in.data(), static_cast<int32_t>(in.size()), out.data(),
                                 static_cast<int32_t>(out.size()), &status);
  if (status == U_BUFFER_OVERFLOW_ERROR) {
    status = U_ZERO_ERROR;
    out.resize(static_cast<size_t>(len));
    len = unorm2_normalize(normalizer, in.data(), static_cast<int32_t>(in.size()), out.data(),
                           static_cast<int32_t>(out.size()), &status);
  }
  ANVIL_CHECK(U_SUCCESS(status), "nfd: ICU normalization failed (", u_errorName(status), ")");
  std::u32string result;
  result.reserve(static_cast<size_t>(len));
  for (int32_t i = 0; i < len;) {
    UChar32 c;
    U16_NEXT(out.data(), i, len, c);
    result.push_back(static_cast<char32_t>(c));
  }
  return result;
}

void append_lowercase(std::u32string& out, char32_t c) {
  if (c == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE -> i + COMBINING DOT ABOVE
    out.push_back(U'i');
    out.push_back(0x307);
    return;
  }
  out.push_back(static_cast<char32_t>(u_tolower(static_cast<UChar32>(c))));
}

}  // namespace anvil::nn::text
