#pragma once
// Reading numbers out of JSON files written by others (tokenizer.json,
// config.json, sentence-transformers' configs). nlohmann's get<int64_t>()
// converts a float with a plain cast, which is undefined behaviour out of
// range: an id written 3e29, or digits past 2^64 (they parse as a float),
// would become any value. These check the JSON type and the range first and
// fail with a message naming the field (fuzz_tokenizer found the cast).
#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "core/base/error.h"

namespace anvil::nn {

// `what` names the value in the error ("config.json: 'hidden_size'").
inline int64_t json_integer(const nlohmann::json& v, const std::string& what) {
  std::string shown = v.dump();
  if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
  ANVIL_CHECK(v.is_number_integer(), what, " must be an integer, got ", shown);
  if (v.is_number_unsigned())
    ANVIL_CHECK(v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), what, " is ", shown,
                ", past the largest int64");
  return v.get<int64_t>();
}

inline double json_number(const nlohmann::json& v, const std::string& what) {
  std::string shown = v.dump();
  if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
  ANVIL_CHECK(v.is_number(), what, " must be a number, got ", shown);
  return v.get<double>();
}

// An optional field of `object`: `fallback` when absent or null. `where`
// names the file.
inline int64_t json_integer_field(const nlohmann::json& object, const char* key, int64_t fallback,
                                  const std::string& where) {
  if (!object.is_object() || !object.contains(key) || object[key].is_null()) return fallback;
  return json_integer(object[key], where + ": '" + key + "'");
}
inline double json_number_field(const nlohmann::json& object, const char* key, double fallback,
                                const std::string& where) {
  if (!object.is_object() || !object.contains(key) || object[key].is_null()) return fallback;
  return json_number(object[key], where + ": '" + key + "'");
}

}  // namespace anvil::nn
