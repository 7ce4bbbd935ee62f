#pragma once
// The TCPStore's server (internal): one background thread, one poll() loop
// over the listening socket and every client. Requests for keys that do not
// exist yet (GET, WAIT) are parked and answered when a SET or ADD makes them
// exist, so clients wait without polling.
//
// The port is open to anything on the network, so every resource a client can
// make the server spend is bounded (see TCPStoreLimits): message, key and
// value sizes, total stored bytes, the number of connections, and how long a
// connection may sit on a partial message or on an unanswered greeting. Each
// refusal drops only the offending connection and writes one line to stderr.
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "distributed/store/store.h"

namespace anvil::distributed {

struct TCPStoreLimits {
  size_t max_connections = 1024;
  size_t max_total_bytes = size_t{1} << 30;  // keys + values stored
  // A connection must greet (send HELLO, with the token) within this time,
  // and finish any message it has started within partial_timeout.
  std::chrono::milliseconds hello_timeout = std::chrono::seconds(30);
  std::chrono::milliseconds partial_timeout = std::chrono::seconds(30);
  std::string token;  // empty: no shared secret required
};

class TCPStoreServer {
 public:
  explicit TCPStoreServer(int port, TCPStoreLimits limits = {});  // port 0: pick a free one
  ~TCPStoreServer();  // stops the thread, closes every socket
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;
  int port() const { return port_; }
  // How many connections or requests were refused (for tests and logs).
  size_t refusals() const { return refusals_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Client {
    std::vector<uint8_t> in;  // bytes received, not yet a whole message
    bool greeted = false;  // sent a HELLO with the right token
    Clock::time_point since;  // accepted at (before HELLO) / partial message started at
  };
  struct Waiter {
    int fd;
    bool is_get;  // GET replies the value; WAIT replies 1
    std::vector<std::string> keys;
  };

  void loop();
  void handle(int fd, const uint8_t* payload, size_t n);
  void reply(int fd, const Bytes& payload);
  bool ready(const Waiter& w) const;
  void wake_waiters();
  void drop(int fd);
  // Counts, logs, sends `answer` when given (the client's reason), drops.
  void refuse(int fd, const std::string& why, const std::optional<Bytes>& answer = std::nullopt);
  void expire_slow_clients();
  int poll_timeout_ms() const;
  size_t stored_bytes_after(const std::string& key, size_t value_size) const;

  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::map<int, Client> clients_;
  std::unordered_map<std::string, Bytes> data_;
  std::vector<Waiter> waiters_;
  TCPStoreLimits limits_;
  size_t stored_bytes_ = 0;
  std::atomic<size_t> refusals_{0};
  std::thread thread_;
};

}  // namespace anvil::distributed
