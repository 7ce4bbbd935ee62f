#include "nn/train/output_file.h"

#include <cctype>
#include <filesystem>

#include <fstream>
#include <system_error>
#include <unistd.h>

#include "core/base/error.h"
#include "nn/serialize/atomic_file.h"

namespace anvil::nn::train {

void write_text_file_atomically(const std::string& path, std::string_view contents) {
  serialize::atomic_write_file(path, contents);
}

void write_binary_file_atomically(const std::string& path, const std::vector<uint8_t>& contents) {
  serialize::atomic_write_file(path, std::string_view(reinterpret_cast<const char*>(contents.data()), contents.size()));
}

void ensure_writable_directory(const std::string& dir, const std::string& what) {
  namespace fs = std::filesystem;
  const fs::path path = dir.empty() ? fs::path(".") : fs::path(dir);
  std::error_code ec;
  fs::create_directories(path, ec);
  ANVIL_CHECK(!ec, "Trainer: cannot create the ", what, " '", path.string(), "': ", ec.message());
  ANVIL_CHECK(fs::is_directory(path, ec), "Trainer: the ", what, " '", path.string(), "' is not a directory");
  // Permissions alone do not tell (root, read-only mounts): create a file.
  const fs::path probe = path / (".anvil-write-test-" + std::to_string(getpid()));
  {
    std::ofstream f(probe);
    ANVIL_CHECK(f.good() && (f << "ok").good(), "Trainer: cannot write into the ", what, " '", path.string(),
                "' (creating a file there failed); check its permissions");
  }
  fs::remove(probe, ec);
}

void ensure_parent_directory(const std::string& file_path, const std::string& what) {
  ensure_writable_directory(std::filesystem::path(file_path).parent_path().string(), what);
}

std::string file_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

}  // namespace anvil::nn::train
