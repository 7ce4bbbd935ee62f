#include "nn/serialize/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

#include "core/base/error.h"

namespace anvil::nn::serialize {

namespace {

// Flushes a file's data to the disk, so the rename below never publishes a
// file whose blocks are still only in the page cache.
void fsync_file(const std::filesystem::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  ANVIL_CHECK(fd >= 0, "atomic_write_file: cannot reopen '", p.string(), "' to sync it: ", std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  ANVIL_CHECK(rc == 0, "atomic_write_file: fsync of '", p.string(), "' failed: ", std::strerror(err));
}

// Makes the rename itself durable. Best effort: some file systems refuse to
// sync a folder, and by now the new file is already in place.
void fsync_folder(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

void remove_quietly(const std::filesystem::path& p) {
  std::error_code ec;
  std::filesystem::remove(p, ec);
}

}  // namespace

std::filesystem::path temporary_path_for(const std::filesystem::path& path) {
  return std::filesystem::path(path.string() + ".tmp." + std::to_string(::getpid()));
}

void atomic_write_file(const std::filesystem::path& path, const std::function<void(std::ostream&)>& write) {
  const std::filesystem::path tmp = temporary_path_for(path);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    ANVIL_CHECK(out.is_open(), "atomic_write_file: cannot create '", tmp.string(), "' (to replace '", path.string(),
                "'): ", std::strerror(errno));
    try {
      write(out);
      out.flush();
      ANVIL_CHECK(!out.fail(), "atomic_write_file: writing '", tmp.string(), "' (to replace '", path.string(),
                  "') failed (disk full?): ", std::strerror(errno), "; '", path.string(), "' is unchanged");
      out.close();
      ANVIL_CHECK(!out.fail(), "atomic_write_file: closing '", tmp.string(), "' failed: ", std::strerror(errno));
    } catch (...) {
      out.close();
      remove_quietly(tmp);
      throw;
    }
  }
  try {
    fsync_file(tmp);
  } catch (...) {
    remove_quietly(tmp);
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    remove_quietly(tmp);
    fail("atomic_write_file: cannot rename '", tmp.string(), "' to '", path.string(), "': ", ec.message());
  }
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  fsync_folder(dir);
}

void atomic_write_file(const std::filesystem::path& path, std::string_view bytes) {
  atomic_write_file(path, [&](std::ostream& out) {
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });
}

}  // namespace anvil::nn::serialize
