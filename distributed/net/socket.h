#pragma once
// Small blocking-socket helpers with deadlines, shared by the TCPStore's
// client and server, the Gloo group (the address it listens on) and the
// parameter server (internal to distributed/). Every wait is bounded by a
// deadline so a silent peer becomes an error, never a hang.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace anvil::distributed::net {

using Clock = std::chrono::steady_clock;

// A connected TCP socket to host:port, retrying refused/unreachable attempts
// until `deadline` (the server may not be listening yet). Returns -1 and sets
// *error when the deadline passes.
int connect_until(const std::string& host, int port, Clock::time_point deadline, std::string* error);
// A listening socket on every interface; port 0 picks a free one. Throws.
int listen_on(int port, int backlog = 128);
// The port a bound socket listens on.
int local_port(int fd);
// All of the bytes, or false on error, peer close or deadline (*timed_out says which).
bool send_all(int fd, const void* data, size_t n, Clock::time_point deadline, bool* timed_out = nullptr);
bool recv_all(int fd, void* data, size_t n, Clock::time_point deadline, bool* timed_out = nullptr);
void close_fd(int& fd);
// The address of this machine's interface that the kernel routes traffic to
// `host` from (a connected UDP socket's local end; nothing is sent), as text:
// the address peers on that network reach this machine at. Empty when host
// does not resolve or has no route (*error says why).
std::string local_address_towards(const std::string& host, std::string* error);
// "Connection refused" etc. for errno.
std::string errno_text(int err);

}  // namespace anvil::distributed::net
