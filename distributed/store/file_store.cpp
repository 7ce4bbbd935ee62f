#include "distributed/store/file_store.h"

#include <cerrno>
#include <thread>
#include <unordered_map>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/base/error.h"
#include "distributed/net/socket.h"
#include "distributed/store/tcp_store_protocol.h"

namespace anvil::distributed {

namespace {

using Map = std::unordered_map<std::string, Bytes>;

// The open, exclusively locked file for the duration of one call.
class LockedFile {
 public:
  explicit LockedFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ANVIL_CHECK(fd_ >= 0, "FileStore: cannot open ", path, ": ", net::errno_text(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        int err = errno;
        ::close(fd_);
        fail("FileStore: cannot lock ", path, ": ", net::errno_text(err));
      }
    }
  }
  ~LockedFile() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

  Map read_all() {
    Bytes content;
    ::lseek(fd_, 0, SEEK_SET);
    uint8_t buf[1 << 14];
    while (true) {
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      ANVIL_CHECK(n >= 0, "FileStore: cannot read ", path_, ": ", net::errno_text(errno));
      if (n == 0) break;
      content.insert(content.end(), buf, buf + n);
    }
    Map map;
    wire::Reader r(content.data(), content.size());
    size_t used = 0;
    // Records are key blob then value blob; a torn tail (a writer killed
    // mid-append) is ignored rather than poisoning the store.
    while (content.size() - used >= 8) {
      try {
        std::string key = r.string();
        Bytes value = r.blob();
        used += 8 + key.size() + value.size();
        map[key] = std::move(value);
      } catch (const Error&) {
        break;
      }
    }
    return map;
  }

  void append(const std::string& key, const Bytes& value) {
    Bytes rec;
    wire::put_string(rec, key);
    wire::put_blob(rec, value.data(), value.size());
    ::lseek(fd_, 0, SEEK_END);
    size_t off = 0;
    while (off < rec.size()) {
      ssize_t n = ::write(fd_, rec.data() + off, rec.size() - off);
      if (n < 0 && errno == EINTR) continue;
      ANVIL_CHECK(n > 0, "FileStore: cannot write ", path_, ": ", net::errno_text(errno));
      off += static_cast<size_t>(n);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

bool has_all(const Map& m, const std::vector<std::string>& keys) {
  for (const auto& k : keys)
    if (m.find(k) == m.end()) return false;
  return true;
}

}  // namespace

FileStore::FileStore(std::string path, std::chrono::milliseconds timeout) : Store(timeout), path_(std::move(path)) {
  LockedFile touch(path_);  // fails early, naming the path, when it cannot be created
}

void FileStore::set(const std::string& key, const Bytes& value) {
  LockedFile f(path_);
  f.append(key, value);
}

Bytes FileStore::get(const std::string& key) {
  wait({key}, timeout());
  LockedFile f(path_);
  return f.read_all().at(key);
}

int64_t FileStore::add(const std::string& key, int64_t delta) {
  LockedFile f(path_);
  Map m = f.read_all();
  int64_t value = 0;
  auto it = m.find(key);
  if (it != m.end()) value = std::stoll(std::string(it->second.begin(), it->second.end()));
  value += delta;
  std::string text = std::to_string(value);
  f.append(key, Bytes(text.begin(), text.end()));
  return value;
}

bool FileStore::check(const std::vector<std::string>& keys) {
  LockedFile f(path_);
  return has_all(f.read_all(), keys);
}

void FileStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    Map m;
    {
      LockedFile f(path_);
      m = f.read_all();
    }
    if (has_all(m, keys)) return;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string missing;
      for (const auto& k : keys)
        if (m.find(k) == m.end()) missing += (missing.empty() ? "'" : ", '") + k + "'";
      fail("FileStore ", path_, ": timed out after ", timeout.count(), " ms waiting for key(s) ", missing,
           " (a key that is never set means some rank did not get this far)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace anvil::distributed
