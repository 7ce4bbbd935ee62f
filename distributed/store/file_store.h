#pragma once
/// @file
/// FileStore: a Store in one file that every rank on one machine opens (a
/// shared filesystem works too when it honours flock). Each call takes an
/// exclusive flock, reads the records, and appends; the last record for a key
/// wins. Waiting for a key re-reads the file with a growing pause (up to
/// 50 ms), bounded by the timeout.
///
/// The file is not removed: the caller owns its path (tests use a temporary
/// directory). Use a fresh file per job; old keys would satisfy new waits.
#include "distributed/store/store.h"

namespace anvil::distributed {

/// A Store in one shared file, for ranks on one machine (see the file comment).
class FileStore : public Store {
 public:
  /// A store in the file at `path` (created if needed), waits bounded by `timeout`.
  explicit FileStore(std::string path, std::chrono::milliseconds timeout = std::chrono::minutes(5));

  /// Sets `key` to `value`, appended to the file under its lock.
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::get;
  using Store::set;  ///< The Store's string overload of set.
  using Store::wait;  ///< The Store's wait with the default timeout.

  const std::string& path() const { return path_; }  ///< The file's path.

 private:
  std::string path_;
};

}  // namespace anvil::distributed
