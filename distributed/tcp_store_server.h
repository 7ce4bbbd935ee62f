#pragma once
// The TCPStore's server (internal): one background thread, one poll() loop
// over the listening socket and every client. Requests for keys that do not
// exist yet (GET, WAIT) are parked and answered when a SET or ADD makes them
// exist, so clients wait without polling.
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "distributed/store.h"

namespace anvil::distributed {

class TCPStoreServer {
 public:
  explicit TCPStoreServer(int port);  // 0: pick a free port
  ~TCPStoreServer();                  // stops the thread, closes every socket
  TCPStoreServer(const TCPStoreServer&) = delete;
  TCPStoreServer& operator=(const TCPStoreServer&) = delete;
  int port() const { return port_; }

 private:
  struct Client {
    std::vector<uint8_t> in;  // bytes received, not yet a whole message
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

  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::map<int, Client> clients_;
  std::unordered_map<std::string, Bytes> data_;
  std::vector<Waiter> waiters_;
  std::thread thread_;
};

}  // namespace anvil::distributed
