// The emulated NCCL's communicator: connections between ranks, the reader
// threads, the rendezvous waits and the watchdog's messages (communicator.h).
#include "kernels/cuda/emulator/nccl/communicator.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace anvil::emulator::nccl {
namespace {

constexpr uint32_t kHelloMagic = 0x616e6e63;  // "annc"
enum FrameType : uint32_t { kClearToSend = 1, kData = 2 };

struct Hello {
  uint32_t magic;
  int32_t rank;
  uint64_t nonce;
};
struct FrameHeader {
  uint32_t type;
  uint32_t kind;
  uint64_t bytes;
};

std::mutex g_last_error_mutex;
std::string g_last_error;

// Abstract-namespace names vanish with their socket: nothing to clean up.
sockaddr_un address_of(uint64_t nonce, int rank, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const int n = std::snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "anvil-emu-nccl-%016llx-%d",
                              static_cast<unsigned long long>(nonce), rank);
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + static_cast<size_t>(n));
  return a;
}

bool read_full(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::recv(fd, c, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_fd(int fd, const void* p, size_t n) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t r = ::send(fd, c, n, MSG_NOSIGNAL);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

std::string seconds(Clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
  return buf;
}

}  // namespace

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::Send:
      return "ncclSend";
    case OpKind::Recv:
      return "ncclRecv";
    case OpKind::AllReduce:
      return "ncclAllReduce";
    case OpKind::Broadcast:
      return "ncclBroadcast";
    case OpKind::AllGather:
      return "ncclAllGather";
    case OpKind::ReduceScatter:
      return "ncclReduceScatter";
  }
  return "nccl?";
}

// Read at every call, so a test may set it before the calls it bounds.
std::chrono::milliseconds op_timeout() {
  const char* v = std::getenv("ANVIL_EMU_NCCL_TIMEOUT");
  double s = v ? std::atof(v) : 60.0;
  if (!(s > 0)) s = 60.0;
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(s * 1000)));
}

void set_last_error(const std::string& message) {
  std::lock_guard<std::mutex> lock(g_last_error_mutex);
  g_last_error = message;
}

std::string last_error() {
  std::lock_guard<std::mutex> lock(g_last_error_mutex);
  return g_last_error;
}

std::string CommImpl::who() const {
  return "anvil emulated NCCL: rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
         " (cuda:" + std::to_string(device) + ")";
}

void CommImpl::fail_locked(ncclResult_t code, const std::string& message) {
  if (state == ncclSuccess || state == ncclInProgress) {
    state = code;
    error = message;
    set_last_error(message);
  }
  changed.notify_all();
}

void CommImpl::end_locked(const std::string& message) {
  if (state == ncclSuccess || state == ncclInProgress) {
    state = ncclInvalidUsage;
    error = message;
  }
  changed.notify_all();
}

void CommImpl::fail(ncclResult_t code, const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex);
  fail_locked(code, message);
}

void CommImpl::connect_all(Clock::time_point deadline) {
  auto stopped = [this] {
    std::lock_guard<std::mutex> lock(mutex);
    return aborted || state != ncclInProgress;
  };
  peers.clear();
  for (int r = 0; r < nranks; ++r) peers.push_back(r == rank ? nullptr : std::make_unique<Peer>());
  if (nranks == 1) {
    std::lock_guard<std::mutex> lock(mutex);
    if (state == ncclInProgress) state = ncclSuccess;
    return;
  }

  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t len = 0;
  sockaddr_un me = address_of(nonce, rank, &len);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&me), len) != 0 || ::listen(listener, nranks) != 0) {
    fail(ncclSystemError, who() + ": cannot listen on its unix socket: " + std::strerror(errno) +
                              " (is another job using the same unique id?)");
    if (listener >= 0) ::close(listener);
    return;
  }
  // Higher ranks: connect (they may not listen yet: retry).
  for (int peer = rank + 1; peer < nranks && !stopped(); ++peer) {
    sockaddr_un to = address_of(nonce, peer, &len);
    for (;;) {
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&to), len) == 0) {
        const Hello hello{kHelloMagic, rank, nonce};
        if (!write_fd(fd, &hello, sizeof hello)) {
          ::close(fd);
          fail(ncclRemoteError, who() + ": rank " + std::to_string(peer) + " closed its connection during setup");
          break;
        }
        peers[static_cast<size_t>(peer)]->fd = fd;
        break;
      }
      ::close(fd);
      if (stopped()) break;
      if (Clock::now() >= deadline) {
        fail(ncclSystemError, who() + ": rank " + std::to_string(peer) + " did not join the communicator within " +
                                  seconds(op_timeout()) + " (did every rank call ncclCommInitRank with this id?)");
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  // Lower ranks: accept.
  for (int accepted = 0; accepted < rank && !stopped();) {
    pollfd p{listener, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) {
      if (Clock::now() >= deadline)
        fail(ncclSystemError, who() + ": " + std::to_string(rank - accepted) +
                                  " lower rank(s) did not join the communicator within " + seconds(op_timeout()));
      continue;
    }
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    Hello hello{};
    if (fd < 0) continue;
    if (!read_full(fd, &hello, sizeof hello) || hello.magic != kHelloMagic || hello.nonce != nonce || hello.rank < 0 ||
        hello.rank >= rank || peers[static_cast<size_t>(hello.rank)]->fd >= 0) {
      ::close(fd);
      continue;
    }
    peers[static_cast<size_t>(hello.rank)]->fd = fd;
    ++accepted;
  }
  ::close(listener);
  std::lock_guard<std::mutex> lock(mutex);
  if (state != ncclInProgress || aborted) return;  // the fds are closed by close_all
  for (int r = 0; r < nranks; ++r)
    if (r != rank) peers[static_cast<size_t>(r)]->reader = std::thread([this, r] { read_loop(r); });
  state = ncclSuccess;
  changed.notify_all();
}

void CommImpl::read_loop(int peer) {
  Peer& p = *peers[static_cast<size_t>(peer)];
  for (;;) {
    FrameHeader h{};
    if (!read_full(p.fd, &h, sizeof h)) break;
    if (h.type == kClearToSend) {
      std::lock_guard<std::mutex> lock(mutex);
      ++p.cts_received;
      changed.notify_all();
      continue;
    }
    DataFrame f{static_cast<OpKind>(h.kind), std::vector<uint8_t>(h.bytes)};
    if (h.type != kData || !read_full(p.fd, f.bytes.data(), f.bytes.size())) break;
    std::lock_guard<std::mutex> lock(mutex);
    p.data.push_back(std::move(f));
    changed.notify_all();
  }
  std::lock_guard<std::mutex> lock(mutex);
  p.closed = true;
  changed.notify_all();
}

void CommImpl::close_all() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    aborted = true;
    changed.notify_all();
  }
  if (connector.joinable()) connector.join();
  for (auto& p : peers)
    if (p && p->fd >= 0) ::shutdown(p->fd, SHUT_RDWR);
  for (auto& p : peers) {
    if (!p) continue;
    if (p->reader.joinable()) p->reader.join();
    // A stream worker may still be writing (it fails fast after the shutdown):
    // the fd is closed, and its number freed for reuse, only between frames.
    std::lock_guard<std::mutex> lock(p->write_mutex);
    if (p->fd >= 0) ::close(p->fd);
    p->fd = -1;
  }
}

bool CommImpl::write_all(int peer, const void* bytes, size_t n) {
  Peer& p = *peers[static_cast<size_t>(peer)];
  return p.fd >= 0 && write_fd(p.fd, bytes, n);
}

bool CommImpl::send_cts(int peer) {
  Peer& p = *peers[static_cast<size_t>(peer)];
  const FrameHeader h{kClearToSend, 0, 0};
  std::lock_guard<std::mutex> lock(p.write_mutex);
  if (write_all(peer, &h, sizeof h)) return true;
  fail(ncclRemoteError,
       who() + ": cannot reach rank " + std::to_string(peer) +
           ": its connection closed (its process exited, or it destroyed or aborted its communicator)");
  return false;
}

bool CommImpl::send_data(int peer, OpKind kind, const void* bytes, size_t n) {
  Peer& p = *peers[static_cast<size_t>(peer)];
  const FrameHeader h{kData, static_cast<uint32_t>(kind), n};
  std::lock_guard<std::mutex> lock(p.write_mutex);
  if (write_all(peer, &h, sizeof h) && (n == 0 || write_all(peer, bytes, n))) return true;
  fail(ncclRemoteError,
       who() + ": " + op_name(kind) + " to rank " + std::to_string(peer) +
           ": its connection closed (its process exited, or it destroyed or aborted its communicator)");
  return false;
}

bool CommImpl::wait_for(int peer, bool cts, Clock::time_point deadline, const std::string& what,
                        const std::string& hint) {
  Peer& p = *peers[static_cast<size_t>(peer)];
  const auto start = Clock::now();
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    if (state != ncclSuccess) return false;  // failed or aborted meanwhile
    if (cts ? p.cts_received > p.cts_used : !p.data.empty()) {
      if (cts) ++p.cts_used;
      return true;
    }
    const std::string peer_s = "rank " + std::to_string(peer);
    if (p.closed) {
      fail_locked(ncclRemoteError, who() + ": " + what + ": " + peer_s +
                                       " closed its connection (its process exited, or it destroyed or aborted its "
                                       "communicator) before " +
                                       (cts ? "reaching the matching call" : "sending"));
      return false;
    }
    if (Clock::now() >= deadline) {
      fail_locked(ncclSystemError,
                  who() + ": " + what + " waited " + seconds(Clock::now() - start) + " for " + peer_s +
                      (cts ? " to reach the matching call" : " to send") + "; " + hint +
                      " (the emulator's deadlock watchdog, ANVIL_EMU_NCCL_TIMEOUT = " + seconds(op_timeout()) + ")");
      return false;
    }
    changed.wait_until(lock, deadline);
  }
}

bool CommImpl::wait_cts(int peer, Clock::time_point deadline, const std::string& what, const std::string& hint) {
  return wait_for(peer, true, deadline, what, hint);
}

bool CommImpl::wait_data(int peer, Clock::time_point deadline, const std::string& what, const std::string& hint,
                         DataFrame* out) {
  if (!wait_for(peer, false, deadline, what, hint)) return false;
  std::lock_guard<std::mutex> lock(mutex);
  Peer& p = *peers[static_cast<size_t>(peer)];
  *out = std::move(p.data.front());
  p.data.pop_front();
  return true;
}

}  // namespace anvil::emulator::nccl
