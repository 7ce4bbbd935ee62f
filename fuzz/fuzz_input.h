#pragma once
// Helpers shared by the libFuzzer harnesses in this folder.
//
// A harness feeds arbitrary bytes to one of anvil's readers. anvil::Error is
// the reader's correct answer to bad input and is caught; anything else (a
// crash, an uncaught exception of another type, an ASan or UBSan report, a
// leak, a hang, an allocation past -rss_limit_mb) is a bug libFuzzer stops on.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace anvil::fuzz {

// Readers that take a path get the input written to this process's own file
// in /dev/shm (memory-backed: no disk traffic per execution).
inline std::string write_input(const uint8_t* data, size_t size, const char* suffix) {
  static const std::string path = "/dev/shm/anvil_fuzz_" + std::to_string(::getpid()) + suffix;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return {};
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace anvil::fuzz
