#pragma once
/// @file
/// TCPStore: the Store every rank reaches over TCP. One process (rank 0 under
/// init_process_group) also runs the server on a background thread; every
/// process, the server's included, talks to it as a client.
///
/// Every call is bounded by the store's timeout: connecting (retried while
/// the server is not up yet), sending, and waiting for a key. A failure is an
/// anvil::Error naming host:port and the key.
///
/// When ANVIL_STORE_TOKEN is set, the server admits only clients presenting
/// the same token (a stray process on the network cannot join the job).
#include <memory>
#include <mutex>

#include "distributed/store/store.h"

namespace anvil::distributed {

class TCPStoreServer;

/// Where a TCPStore connects (or serves), as torch.distributed.TCPStore's arguments.
struct TCPStoreOptions {
  std::string host = "127.0.0.1";  ///< the server's address
  int port = 29500;  ///< with is_server, 0 picks a free port (see port())
  bool is_server = false;  ///< this process runs the server (rank 0)
  std::chrono::milliseconds timeout = std::chrono::minutes(5);  ///< how long a connect or wait may take
};

/// A Store served over TCP by rank 0 (see the file comment).
class TCPStore : public Store {
 public:
  explicit TCPStore(const TCPStoreOptions& options);  ///< Connects to the server (starting it first with is_server).
  ~TCPStore() override;

  void set(const std::string& key, const Bytes& value) override;  ///< Sets `key` to `value` on the server.
  Bytes get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::get;
  using Store::set;  ///< The Store's string overload of set.
  using Store::wait;  ///< The Store's wait with the default timeout.

  const std::string& host() const { return host_; }  ///< The server's host.
  int port() const { return port_; }  ///< The server's port (the one picked, with port 0).

 private:
  /// One request/reply round trip under the lock; reconnects when the last
  /// call left the connection broken (a timed-out reply may still arrive).
  Bytes call(const Bytes& request, const std::string& what, std::chrono::milliseconds timeout);
  void connect_locked(std::chrono::steady_clock::time_point deadline);

  std::string host_;
  int port_;
  std::string token_;  ///< ANVIL_STORE_TOKEN, sent in the HELLO
  std::unique_ptr<TCPStoreServer> server_;
  std::mutex mu_;
  int fd_ = -1;
};

}  // namespace anvil::distributed
