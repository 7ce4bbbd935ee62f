// libFuzzer: the checkpoint loader (nn/serialize/checkpoint.cpp) on
// arbitrary files: the safetensors reader beneath it, then the checkpoint's
// own rules (format metadata, sections, optimizer and scheduler state).
#include <cstdint>

#include "core/base/error.h"
#include "fuzz/fuzz_input.h"
#include "nn/serialize/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = anvil::fuzz::write_input(data, size, ".safetensors");
  try {
    (void)anvil::nn::serialize::load_checkpoint(path);
  } catch (const anvil::Error&) {
  }
  return 0;
}
