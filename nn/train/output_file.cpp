#include "nn/train/output_file.h"

#include <cctype>
#include <filesystem>

#include "nn/serialize/atomic_file.h"

namespace anvil::nn::train {

void write_text_file_atomically(const std::string& path, std::string_view contents) {
  serialize::atomic_write_file(path, contents);
}

void write_binary_file_atomically(const std::string& path, const std::vector<uint8_t>& contents) {
  serialize::atomic_write_file(
      path, std::string_view(reinterpret_cast<const char*>(contents.data()), contents.size()));
}

std::string file_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

}  // namespace anvil::nn::train
