#include "nn/serialize/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <system_error>

#include "core/base/error.h"

namespace anvil::nn::serialize {

namespace {

// An ostream's buffer straight over a file descriptor. It keeps the errno of
// the first write that failed: an ofstream only says that it failed, and
// errno read afterwards may belong to another call, so "disk full" would be a
// guess. The descriptor is also the one fsync'ed: a write-back error is
// reported to the descriptors open when it happened, not to a reopened one.
class FileSink final : public std::streambuf {
 public:
  explicit FileSink(int fd) : fd_(fd) { setp(buffer_, buffer_ + sizeof buffer_); }
  int error() const { return error_; }
  bool drain() {
    const auto n = static_cast<size_t>(pptr() - pbase());
    setp(buffer_, buffer_ + sizeof buffer_);
    return write_all(buffer_, n);
  }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n < static_cast<std::streamsize>(sizeof buffer_)) return std::streambuf::xsputn(s, n);
    return drain() && write_all(s, static_cast<size_t>(n)) ? n : 0;  // large tensors skip the copy
  }

 private:
  bool write_all(const char* p, size_t n) {
    while (n > 0 && error_ == 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0)
        error_ = errno;
      else {
        p += w;
        n -= static_cast<size_t>(w);
      }
    }
    return error_ == 0;
  }

  int fd_;
  int error_ = 0;
  char buffer_[1 << 16];
};

// What a failed write or sync means for the user: the cause in words, with
// the remedy when the file system is full.
std::string cause(int err) {
  std::string text = std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) text += " (the file system is full: free space there or save elsewhere)";
  return text;
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
  const std::string what = "atomic_write_file: writing '" + tmp.string() + "' (to replace '" + path.string() + "')";
  const std::string unchanged = "; '" + path.string() + "' is unchanged";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  const int open_error = errno;
  ANVIL_CHECK(fd >= 0, "atomic_write_file: cannot create '", tmp.string(), "' (to replace '", path.string(),
              "'): ", cause(open_error), unchanged);
  bool open = true;
  try {
    auto sink = std::make_unique<FileSink>(fd);  // its 64 KiB buffer stays off the stack
    std::ostream out(sink.get());
    write(out);
    if (!sink->drain() || out.bad())
      fail(what, " failed: ", sink->error() != 0 ? cause(sink->error()) : std::string("the stream failed"), unchanged);
    if (::fsync(fd) != 0) {
      const int err = errno;
      fail(what, ": fsync failed: ", cause(err), unchanged);
    }
    open = false;  // the descriptor is gone after close, whatever it returns
    if (::close(fd) != 0) {
      const int err = errno;
      fail(what, ": close failed: ", cause(err), unchanged);
    }
  } catch (...) {
    if (open) ::close(fd);
    remove_quietly(tmp);
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    remove_quietly(tmp);
    fail("atomic_write_file: cannot rename '", tmp.string(), "' to '", path.string(), "': ", ec.message(), unchanged);
  }
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  fsync_folder(dir);
}

void atomic_write_file(const std::filesystem::path& path, std::string_view bytes) {
  atomic_write_file(path,
                    [&](std::ostream& out) { out.write(bytes.data(), static_cast<std::streamsize>(bytes.size())); });
}

}  // namespace anvil::nn::serialize
