// libFuzzer: the TCPStore server (distributed/store/tcp_store_server.cpp) reading
// arbitrary bytes from a client. One server runs for the whole campaign on
// a loopback port; each input is one connection that sends (after a valid
// HELLO when the first byte is odd, so the fuzzer reaches the commands) the
// input's bytes, closes its sending side and reads whatever comes back. The
// server must neither crash nor stop serving: every input ends with a
// well-behaved client's round trip, which aborts if the server is gone.
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "core/base/error.h"
#include "distributed/net/socket.h"
#include "distributed/store/tcp_store.h"
#include "distributed/store/tcp_store_protocol.h"
#include "distributed/store/tcp_store_server.h"

namespace {

using namespace anvil::distributed;
using Clock = std::chrono::steady_clock;

TCPStoreServer& server() {
  static TCPStoreServer* s = [] {
    TCPStoreLimits limits;
    limits.max_connections = 64;
    limits.max_total_bytes = size_t{4} << 20;  // inputs accumulate keys across the campaign
    limits.hello_timeout = std::chrono::seconds(2);
    limits.partial_timeout = std::chrono::seconds(2);
    return new TCPStoreServer(0, limits);  // never destroyed: the process ends with the campaign
  }();
  return *s;
}

void hostile_client(const uint8_t* data, size_t size) {
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  std::string error;
  int fd = net::connect_until("127.0.0.1", server().port(), deadline, &error);
  if (fd < 0) std::abort();  // the server stopped accepting
  Bytes msg;
  if (data[0] % 2 == 1) {
    Bytes hello{wire::kHello};
    wire::put_string(hello, "");
    wire::put_u32(msg, static_cast<uint32_t>(hello.size()));
    msg.insert(msg.end(), hello.begin(), hello.end());
  }
  msg.insert(msg.end(), data + 1, data + size);
  net::send_all(fd, msg.data(), msg.size(), deadline);  // the server may close first: fine
  ::shutdown(fd, SHUT_WR);
  uint8_t sink[4096];
  bool timed_out = false;
  // Until the server closes (it drops a client whose stream ends) or 2 s pass.
  while (net::recv_all(fd, sink, 1, deadline, &timed_out)) {
  }
  net::close_fd(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  hostile_client(data, size);
  // A real client still gets served.
  TCPStoreOptions o;
  o.port = server().port();
  o.timeout = std::chrono::seconds(5);
  TCPStore client(o);
  if (client.add("fuzz/alive", 1) < 1) std::abort();
  return 0;
}
