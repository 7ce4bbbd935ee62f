// libFuzzer: the IDX reader (nn/data/idx.cpp) on arbitrary files, plain or
// gzip-compressed (zlib recognises gzip by its magic bytes, so the fuzzer
// reaches both paths through one file name).
#include <cstdint>

#include "core/base/error.h"
#include "fuzz/fuzz_input.h"
#include "nn/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = anvil::fuzz::write_input(data, size, ".idx");
  try {
    (void)anvil::nn::data::read_idx(path);
  } catch (const anvil::Error&) {
  }
  return 0;
}
