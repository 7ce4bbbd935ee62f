#include "distributed/store/tcp_store_server.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/base/error.h"
#include "distributed/net/socket.h"
#include "distributed/store/tcp_store_protocol.h"

namespace anvil::distributed {

using wire::kMaxMessage;

TCPStoreServer::TCPStoreServer(int port, TCPStoreLimits limits) : limits_(std::move(limits)) {
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
    if (w.is_get)
      reply(w.fd, data_.at(w.keys[0]));
    else
      reply(w.fd, Bytes{1});
  }
}

void TCPStoreServer::drop(int fd) {
  if (clients_.erase(fd) == 0) return;
  ::close(fd);
  std::erase_if(waiters_, [fd](const Waiter& w) { return w.fd == fd; });
}

void TCPStoreServer::refuse(int fd, const std::string& why, const std::optional<Bytes>& answer) {
  // Counted before the answer goes out: a client that has read its refusal
  // must see refusals() count it (it did not when the answer went first; the
  // hostile-store test saw 0 under ThreadSanitizer's slower schedule).
  ++refusals_;
  std::fprintf(stderr, "[anvil TCPStore :%d] dropping connection %d: %s\n", port_, fd, why.c_str());
  if (answer) reply(fd, *answer);
  drop(fd);
}

size_t TCPStoreServer::stored_bytes_after(const std::string& key, size_t value_size) const {
  size_t total = stored_bytes_ + key.size() + value_size;
  auto it = data_.find(key);
  if (it != data_.end()) total -= key.size() + it->second.size();
  return total;
}

void TCPStoreServer::handle(int fd, const uint8_t* payload, size_t n) {
  wire::Reader r(payload, n);
  uint8_t command = r.u8();
  Client& client = clients_.at(fd);
  if (!client.greeted && command != wire::kHello) {
    refuse(fd, "first message is not HELLO (not an anvil TCPStore client)");
    return;
  }
  // Refuses a write that would take the store past its byte budget.
  auto fits = [&](const std::string& key, size_t value_size) {
    size_t after = stored_bytes_after(key, value_size);
    if (after <= limits_.max_total_bytes) return true;
    refuse(fd,
           "storing '" + key.substr(0, 64) + "' would hold " + std::to_string(after) +
               " bytes, over the store's limit of " + std::to_string(limits_.max_total_bytes),
           Bytes{0});  // tells the client why, before the drop
    return false;
  };
  auto store = [&](const std::string& key, Bytes value) {
    stored_bytes_ = stored_bytes_after(key, value.size());
    data_[key] = std::move(value);
  };
  switch (command) {
    case wire::kHello: {
      std::string token = r.string();
      if (token != limits_.token) {
        ++refusals_;
        std::fprintf(stderr, "[anvil TCPStore :%d] refusing connection %d: wrong ANVIL_STORE_TOKEN\n", port_, fd);
        reply(fd, Bytes{0});
        drop(fd);
        return;
      }
      client.greeted = true;
      reply(fd, Bytes{1});
      break;
    }
    case wire::kSet: {
      std::string key = r.key();
      Bytes value = r.blob();
      if (!fits(key, value.size())) return;
      store(key, std::move(value));
      reply(fd, Bytes{1});
      wake_waiters();
      break;
    }
    case wire::kGet: {
      Waiter w{fd, true, {r.key()}};
      if (ready(w))
        reply(fd, data_.at(w.keys[0]));
      else
        waiters_.push_back(std::move(w));
      break;
    }
    case wire::kAdd: {
      std::string key = r.key();
      int64_t delta = r.i64();
      int64_t value = 0;
      auto it = data_.find(key);
      if (it != data_.end()) {
        // The key may hold anything a SET wrote: only a whole decimal int64 counts.
        const std::string text(it->second.begin(), it->second.end());
        size_t used = 0;
        try {
          value = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        ANVIL_CHECK(used > 0 && used == text.size(), "ADD on key '", key.substr(0, 64),
                    "', whose value is not an integer");
      }
      // Found by fuzz_store_server: a signed overflow here was undefined behaviour.
      ANVIL_CHECK(!__builtin_add_overflow(value, delta, &value), "ADD ", delta, " to key '", key.substr(0, 64),
                  "' would overflow int64");
      std::string text = std::to_string(value);
      if (!fits(key, text.size())) return;
      store(key, Bytes(text.begin(), text.end()));
      Bytes out;
      wire::put_i64(out, value);
      reply(fd, out);
      wake_waiters();
      break;
    }
    case wire::kCheck:
    case wire::kWait: {
      bool is_wait = command == wire::kWait;
      uint32_t count = r.u32();
      Waiter w{fd, false, {}};
      for (uint32_t i = 0; i < count; ++i) w.keys.push_back(r.key());
      bool ok = ready(w);
      if (!is_wait)
        reply(fd, Bytes{static_cast<uint8_t>(ok ? 1 : 0)});
      else if (ok)
        reply(fd, Bytes{1});
      else
        waiters_.push_back(std::move(w));
      break;
    }
    default:
      refuse(fd, "unknown command " + std::to_string(command));
  }
}

void TCPStoreServer::expire_slow_clients() {
  auto now = Clock::now();
  std::vector<std::pair<int, std::string>> expired;
  for (const auto& [fd, c] : clients_) {
    if (!c.greeted && now - c.since > limits_.hello_timeout)
      expired.emplace_back(fd, "no HELLO within " + std::to_string(limits_.hello_timeout.count()) + " ms");
    else if (c.greeted && !c.in.empty() && now - c.since > limits_.partial_timeout)
      expired.emplace_back(fd, "a partial message (" + std::to_string(c.in.size()) + " bytes) not completed within " +
                                   std::to_string(limits_.partial_timeout.count()) + " ms");
  }
  for (const auto& [fd, why] : expired) refuse(fd, why);
}

int TCPStoreServer::poll_timeout_ms() const {
  // Sleep until the earliest deadline of a client that has one; forever if none.
  auto now = Clock::now();
  auto next = Clock::time_point::max();
  for (const auto& [fd, c] : clients_) {
    if (!c.greeted)
      next = std::min(next, c.since + limits_.hello_timeout);
    else if (!c.in.empty())
      next = std::min(next, c.since + limits_.partial_timeout);
  }
  if (next == Clock::time_point::max()) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
  return static_cast<int>(std::clamp<long long>(ms, 0, 60'000));
}

void TCPStoreServer::loop() {
  std::vector<pollfd> fds;
  std::vector<uint8_t> buf(1 << 16);
  while (true) {
    fds.clear();
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (auto& [fd, c] : clients_) fds.push_back({fd, POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) return;  // asked to stop
    expire_slow_clients();
    // Accept every pending connection (bounded per round), so a burst of
    // connects (many ranks, or a flood) does not overflow the listen backlog.
    for (int round = 0; round < 256 && (fds[1].revents & POLLIN); ++round) {
      pollfd pending{listen_fd_, POLLIN, 0};
      if (round > 0 && ::poll(&pending, 1, 0) <= 0) break;
      int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0 && clients_.size() >= limits_.max_connections) {
        ++refusals_;
        std::fprintf(stderr, "[anvil TCPStore :%d] refusing a connection: already %zu open (the limit)\n", port_,
                     clients_.size());
        ::close(fd);
      } else if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        Client c;
        c.since = Clock::now();
        clients_[fd] = std::move(c);
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
      bool was_empty = in.empty();
      in.insert(in.end(), buf.begin(), buf.begin() + got);
      // Handle every whole message that arrived.
      size_t used = 0;
      bool dropped = false;
      while (in.size() - used >= 4) {
        wire::Reader hdr(in.data() + used, 4);
        uint32_t len = hdr.u32();
        if (len == 0 || len > kMaxMessage) {
          refuse(fd, "message length " + std::to_string(len) + " outside 1.." + std::to_string(kMaxMessage));
          dropped = true;
          break;
        }
        if (in.size() - used - 4 < len) break;
        std::vector<uint8_t> msg(in.begin() + used + 4, in.begin() + used + 4 + len);
        used += 4 + len;
        try {
          handle(fd, msg.data(), msg.size());
        } catch (const std::exception& e) {
          refuse(fd, std::string("malformed request: ") + e.what());
        }
        if (clients_.find(fd) == clients_.end()) {
          dropped = true;
          break;
        }
      }
      if (dropped) continue;
      in.erase(in.begin(), in.begin() + used);
      // A partial message's clock starts when its first byte arrives.
      Client& c = clients_.at(fd);
      if (c.greeted && !in.empty() && (was_empty || used > 0)) c.since = Clock::now();
    }
  }
}

}  // namespace anvil::distributed
