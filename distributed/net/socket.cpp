#include "distributed/net/socket.h"

#include <cerrno>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/base/error.h"

namespace anvil::distributed::net {

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns the message pointer.
  return std::string(strerror_r(err, buf, sizeof buf));
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

namespace {

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > 1000000 ? 1000000 : static_cast<int>(left);
}

// One non-blocking connect attempt bounded by the deadline. 0 on success,
// else the errno.
int try_connect(int fd, const sockaddr* addr, socklen_t len, Clock::time_point deadline) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(fd, addr, len);
  int err = 0;
  if (rc != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int n = ::poll(&p, 1, remaining_ms(deadline));
      if (n <= 0) {
        err = ETIMEDOUT;
      } else {
        socklen_t sl = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl);
      }
    }
  }
  fcntl(fd, F_SETFL, flags);
  return err;
}

}  // namespace

int connect_until(const std::string& host, int port, Clock::time_point deadline, std::string* error) {
  std::string last = "no attempt made";
  auto backoff = std::chrono::milliseconds(10);
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (gai != 0) {
      last = std::string("cannot resolve host: ") + gai_strerror(gai);
    } else {
      for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
          last = errno_text(errno);
          continue;
        }
        int err = try_connect(fd, a->ai_addr, a->ai_addrlen, deadline);
        if (err == 0) {
          ::freeaddrinfo(res);
          int one = 1;
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          return fd;
        }
        last = errno_text(err);
        ::close(fd);
      }
      ::freeaddrinfo(res);
    }
    if (Clock::now() + backoff >= deadline) break;
    // The server may simply not be up yet: retry with a growing pause.
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
  }
  if (error) *error = last;
  return -1;
}

std::string local_address_towards(const std::string& host, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  // Any port: a UDP connect only picks the route and the source address.
  if (int gai = ::getaddrinfo(host.c_str(), "9", &hints, &res); gai != 0) {
    *error = "cannot resolve '" + host + "': " + gai_strerror(gai);
    return "";
  }
  std::string found;
  *error = "no address of '" + host + "'";
  for (addrinfo* a = res; a != nullptr && found.empty(); a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      *error = "no route to '" + host + "': " + errno_text(errno);
    } else if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char text[NI_MAXHOST] = {};
      if (::getnameinfo(reinterpret_cast<sockaddr*>(&local), len, text, sizeof text, nullptr, 0, NI_NUMERICHOST) == 0)
        found = text;
    }
    ::close(fd);
  }
  ::freeaddrinfo(res);
  return found;
}

int listen_on(int port, int backlog) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6) fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ANVIL_CHECK(fd >= 0, "TCPStore: socket() failed: ", errno_text(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    int zero = 0;  // dual stack: IPv4 clients too
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0) {
    int err = errno;
    ::close(fd);
    fail("TCPStore: cannot listen on port ", port, ": ", errno_text(err),
         err == EADDRINUSE ? " (another job uses this MASTER_PORT? pick another one)" : "");
  }
  if (::listen(fd, backlog) != 0) {
    int err = errno;
    ::close(fd);
    fail("TCPStore: listen() on port ", port, " failed: ", errno_text(err));
  }
  return fd;
}

int local_port(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ANVIL_CHECK(getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0, "getsockname failed: ", errno_text(errno));
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

namespace {

// Moves n bytes with io(offset, count) (a non-blocking send or recv), waiting
// for `events` with poll until the deadline. False on timeout (*timed_out set),
// error, or a peer that closed the connection (recv returned 0).
template <typename Io>
bool transfer_all(int fd, short events, size_t n, Clock::time_point deadline, bool* timed_out, Io io) {
  if (timed_out) *timed_out = false;
  size_t done = 0;
  while (done < n) {
    pollfd pf{fd, events, 0};
    int r = ::poll(&pf, 1, remaining_ms(deadline));
    if (r == 0) {
      if (timed_out) *timed_out = true;
      return false;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    ssize_t moved = io(done, n - done);
    if (moved == 0) return false;  // peer closed
    if (moved < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return false;
    }
    done += static_cast<size_t>(moved);
  }
  return true;
}

}  // namespace

bool send_all(int fd, const void* data, size_t n, Clock::time_point deadline, bool* timed_out) {
  const char* p = static_cast<const char*>(data);
  return transfer_all(fd, POLLOUT, n, deadline, timed_out, [&](size_t offset, size_t count) {
    return ::send(fd, p + offset, count, MSG_NOSIGNAL | MSG_DONTWAIT);
  });
}

bool recv_all(int fd, void* data, size_t n, Clock::time_point deadline, bool* timed_out) {
  char* p = static_cast<char*>(data);
  return transfer_all(fd, POLLIN, n, deadline, timed_out,
                      [&](size_t offset, size_t count) { return ::recv(fd, p + offset, count, MSG_DONTWAIT); });
}

}  // namespace anvil::distributed::net
