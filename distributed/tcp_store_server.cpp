#include "distributed/tcp_store_server.h"

#include <cerrno>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/base/error.h"
#include "distributed/socket.h"
#include "distributed/tcp_store_protocol.h"

namespace anvil::distributed {

namespace {
// Caps one message so a stray connection (a port scanner, a wrong client)
// cannot make the server allocate gigabytes.
constexpr uint32_t kMaxMessage = 1u << 30;
}  // namespace

TCPStoreServer::TCPStoreServer(int port) {
  listen_fd_ = net::listen_on(port);
  port_ = net::local_port(listen_fd_);
  if (::pipe2(wake_pipe_, O_CLOEXEC) != 0) {
    net::close_fd(listen_fd_);
    fail("TCPStore server: pipe() failed: ", net::errno_text(errno));
  }
  thread_ = std::thread([this] { loop(); });
}

TCPStoreServer::~TCPStoreServer() {
  char c = 'q';
  ssize_t ignored = ::write(wake_pipe_[1], &c, 1);
  (void)ignored;
  if (thread_.joinable()) thread_.join();
  for (auto& [fd, client] : clients_) ::close(fd);
  net::close_fd(listen_fd_);
  net::close_fd(wake_pipe_[0]);
  net::close_fd(wake_pipe_[1]);
}

void TCPStoreServer::reply(int fd, const Bytes& payload) {
  Bytes msg;
  msg.reserve(payload.size() + 4);
  wire::put_u32(msg, static_cast<uint32_t>(payload.size()));
  msg.insert(msg.end(), payload.begin(), payload.end());
  // A client that does not read its reply within a few seconds is gone or
  // broken; dropping it keeps the server serving everyone else.
  auto deadline = net::Clock::now() + std::chrono::seconds(5);
  if (!net::send_all(fd, msg.data(), msg.size(), deadline)) drop(fd);
}

bool TCPStoreServer::ready(const Waiter& w) const {
  for (const auto& k : w.keys)
    if (data_.find(k) == data_.end()) return false;
  return true;
}

void TCPStoreServer::wake_waiters() {
  // Replying may drop a client (and its waiters), so collect first.
  std::vector<Waiter> done;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (ready(*it)) {
      done.push_back(std::move(*it));
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& w : done) {
    if (clients_.find(w.fd) == clients_.end()) continue;
    if (w.is_get) reply(w.fd, data_.at(w.keys[0]));
    else reply(w.fd, Bytes{1});
  }
}

void TCPStoreServer::drop(int fd) {
  if (clients_.erase(fd) == 0) return;
  ::close(fd);
  std::erase_if(waiters_, [fd](const Waiter& w) { return w.fd == fd; });
}

void TCPStoreServer::handle(int fd, const uint8_t* payload, size_t n) {
  wire::Reader r(payload, n);
  switch (r.u8()) {
    case wire::kSet: {
      std::string key = r.string();
      data_[key] = r.blob();
      reply(fd, Bytes{1});
      wake_waiters();
      break;
    }
    case wire::kGet: {
      Waiter w{fd, true, {r.string()}};
      if (ready(w)) reply(fd, data_.at(w.keys[0]));
      else waiters_.push_back(std::move(w));
      break;
    }
    case wire::kAdd: {
      std::string key = r.string();
      int64_t delta = r.i64();
      int64_t value = 0;
      auto it = data_.find(key);
      if (it != data_.end()) value = std::stoll(std::string(it->second.begin(), it->second.end()));
      value += delta;
      std::string text = std::to_string(value);
      data_[key] = Bytes(text.begin(), text.end());
      Bytes out;
      wire::put_i64(out, value);
      reply(fd, out);
      wake_waiters();
      break;
    }
    case wire::kCheck:
    case wire::kWait: {
      bool is_wait = payload[0] == wire::kWait;
      uint32_t count = r.u32();
      Waiter w{fd, false, {}};
      for (uint32_t i = 0; i < count; ++i) w.keys.push_back(r.string());
      bool ok = ready(w);
      if (!is_wait) reply(fd, Bytes{static_cast<uint8_t>(ok ? 1 : 0)});
      else if (ok) reply(fd, Bytes{1});
      else waiters_.push_back(std::move(w));
      break;
    }
    default:
      drop(fd);  // not one of our clients
  }
}

void TCPStoreServer::loop() {
  std::vector<pollfd> fds;
  std::vector<uint8_t> buf(1 << 16);
  while (true) {
    fds.clear();
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& [fd, c] : clients_) fds.push_back({fd, POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;  // asked to stop
    if (fds[1].revents & POLLIN) {
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        clients_[fd] = Client{};
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      int fd = fds[i].fd;
      auto it = clients_.find(fd);
      if (it == clients_.end()) continue;  // dropped while handling another
      ssize_t got = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
      if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) {
        drop(fd);
        continue;
      }
      if (got < 0) continue;
      auto& in = it->second.in;
      in.insert(in.end(), buf.begin(), buf.begin() + got);
      // Handle every whole message that arrived.
      size_t used = 0;
      bool dropped = false;
      while (in.size() - used >= 4) {
        wire::Reader hdr(in.data() + used, 4);
        uint32_t len = hdr.u32();
        if (len == 0 || len > kMaxMessage) {
          drop(fd);
          dropped = true;
          break;
        }
        if (in.size() - used - 4 < len) break;
        std::vector<uint8_t> msg(in.begin() + used + 4, in.begin() + used + 4 + len);
        used += 4 + len;
        try {
          handle(fd, msg.data(), msg.size());
        } catch (const std::exception&) {
          drop(fd);  // malformed: a client that does not speak our protocol
        }
        if (clients_.find(fd) == clients_.end()) {
          dropped = true;
          break;
        }
      }
      if (!dropped) in.erase(in.begin(), in.begin() + used);
    }
  }
}

}  // namespace anvil::distributed
