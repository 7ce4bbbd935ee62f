#pragma once
/// @file
/// A Store is a small key-value service every rank can reach: the rendezvous
/// point where ranks find each other (Gloo's addresses, NCCL's unique id) and
/// agree on things before any collective works. After torch.distributed's
/// Store: keys are strings, values are bytes, get() waits for the key.
///
/// Implementations: TCPStore (tcp_store.cpp; rank 0 serves it on MASTER_PORT)
/// and FileStore (file_store.cpp; one shared file, for ranks on one machine).
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace anvil::distributed {

using Bytes = std::vector<uint8_t>;  ///< A value in a store: raw bytes.

/// A key-value store the ranks of a job share to meet (rendezvous) and exchange small values, as torch.distributed's
/// Store.
class Store {
 public:
  /// A store whose waits time out after `timeout`.
  explicit Store(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  virtual ~Store() = default;

  /// Sets `key` to `value` (overwriting), waking waiters.
  virtual void set(const std::string& key, const Bytes& value) = 0;
  /// Waits until the key exists (at most timeout(), then anvil::Error naming the key).
  virtual Bytes get(const std::string& key) = 0;
  /// Adds delta to the integer stored at key (0 when absent) and returns the sum.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// True when every key exists; does not wait.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  ///@{
  /// Waits until every key exists, at most `timeout`.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  void wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }
  ///@}

  std::chrono::milliseconds timeout() const { return timeout_; }  ///< The default wait timeout.
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }  ///< Sets the default wait timeout.

  /// set with a string value.
  void set(const std::string& key, const std::string& value) { set(key, Bytes(value.begin(), value.end())); }
  /// get as a string.
  std::string get_string(const std::string& key) {
    Bytes b = get(key);
    return {b.begin(), b.end()};
  }

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace anvil::distributed
