// libFuzzer: the TCPStore client (distributed/store/tcp_store.cpp) reading
// arbitrary replies. A stand-in server on a loopback port answers every
// connection with the input's bytes (the HELLO's answer and the replies
// that follow, as one stream) and closes it; the client then runs each of
// its calls. anvil::Error is the right answer to a bad reply; a crash, a
// sanitizer report or a hang is a bug.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "distributed/net/socket.h"
#include "distributed/store/tcp_store.h"

namespace {

using namespace anvil::distributed;
using Clock = std::chrono::steady_clock;

class ReplayServer {
 public:
  ReplayServer() : listen_fd_(net::listen_on(0)), port_(net::local_port(listen_fd_)) {
    std::thread([this] { serve(); }).detach();  // lives as long as the campaign
  }
  int port() const { return port_; }
  void set_reply(const uint8_t* data, size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    reply_.assign(data, data + size);
  }

 private:
  void serve() {
    for (;;) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      // Read what the client sent so far (its HELLO or request), then answer.
      pollfd p{fd, POLLIN, 0};
      uint8_t buf[4096];
      if (::poll(&p, 1, 100) > 0) (void)::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      std::vector<uint8_t> reply;
      {
        std::lock_guard<std::mutex> lock(mu_);
        reply = reply_;
      }
      net::send_all(fd, reply.data(), reply.size(), Clock::now() + std::chrono::milliseconds(200));
      net::close_fd(fd);
    }
  }
  int listen_fd_;
  int port_;
  std::mutex mu_;
  std::vector<uint8_t> reply_;
};

ReplayServer& replay_server() {
  static ReplayServer* s = new ReplayServer;
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ReplayServer& server = replay_server();
  server.set_reply(data, size);
  TCPStoreOptions o;
  o.port = server.port();
  o.timeout = std::chrono::milliseconds(500);
  try {
    TCPStore client(o);
    // Every call reconnects (the stand-in closed the last connection), so
    // each one reads the input again: from the HELLO's answer on.
    try {
      (void)client.get("k");
    } catch (const anvil::Error&) {
    }
    try {
      (void)client.add("k", 1);
    } catch (const anvil::Error&) {
    }
    try {
      (void)client.check({"k", "j"});
    } catch (const anvil::Error&) {
    }
    try {
      client.set("k", "v");
    } catch (const anvil::Error&) {
    }
    try {
      client.wait({"k"}, std::chrono::milliseconds(200));
    } catch (const anvil::Error&) {
    }
  } catch (const anvil::Error&) {
  }
  return 0;
}
