// libFuzzer: the safetensors reader (nn/serialize/safetensors.cpp) on
// arbitrary bytes. A file it accepts must survive a round trip: written
// again and read back, the same names, dtypes, shapes, bytes and metadata.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/base/error.h"
#include "nn/serialize/safetensors.h"

using namespace anvil;
using namespace anvil::nn::serialize;

namespace {

bool same(const SafetensorsContents& a, const SafetensorsContents& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& [na, ta] = a.tensors[i];
    const auto& [nb, tb] = b.tensors[i];
    if (na != nb || ta.dtype() != tb.dtype() || ta.shape() != tb.shape()) return false;
    const size_t bytes = static_cast<size_t>(ta.numel()) * itemsize(ta.dtype());
    if (bytes && std::memcmp(ta.data_ptr(), tb.data_ptr(), bytes) != 0) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  SafetensorsContents contents;
  try {
    contents = deserialize_safetensors(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const Error&) {
    return 0;  // refused, with a message: the right answer to bad bytes
  }
  const std::string again = serialize_safetensors(contents.tensors, contents.metadata);
  if (!same(contents, deserialize_safetensors(again))) std::abort();  // accepted, but not what was read
  return 0;
}
