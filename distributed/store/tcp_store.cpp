#include "distributed/store/tcp_store.h"

#include <cstdlib>

#include "core/base/error.h"
#include "distributed/net/socket.h"
#include "distributed/store/tcp_store_protocol.h"
#include "distributed/store/tcp_store_server.h"

namespace anvil::distributed {

namespace {
std::string keys_text(const std::vector<std::string>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? ", '" : "'") + keys[i] + "'";
  return s;
}

// Appends a key, refusing here (with a clear error) one the server would refuse.
void put_key(Bytes& req, const std::string& key) {
  ANVIL_CHECK(key.size() <= wire::kMaxKey, "TCPStore: key '", key.substr(0, 64), "...' is ", key.size(),
              " bytes; keys are limited to ", wire::kMaxKey);
  wire::put_string(req, key);
}

// The job's shared secret: every rank's environment carries the same one.
std::string token_from_env() {
  const char* t = std::getenv("ANVIL_STORE_TOKEN");
  return t ? t : "";
}
}  // namespace

TCPStore::TCPStore(const TCPStoreOptions& options)
    : Store(options.timeout), host_(options.host), port_(options.port), token_(token_from_env()) {
  if (options.is_server) {
    TCPStoreLimits limits;
    limits.token = token_;
    server_ = std::make_unique<TCPStoreServer>(options.port, limits);
    port_ = server_->port();
  }
  ANVIL_CHECK(port_ > 0 && port_ < 65536, "TCPStore: invalid port ", port_, " for ", host_);
  std::lock_guard<std::mutex> lock(mu_);
  connect_locked(std::chrono::steady_clock::now() + timeout());
}

TCPStore::~TCPStore() {
  net::close_fd(fd_);
  server_.reset();
}

void TCPStore::connect_locked(std::chrono::steady_clock::time_point deadline) {
  std::string error;
  fd_ = net::connect_until(host_, port_, deadline, &error);
  ANVIL_CHECK(fd_ >= 0, "TCPStore: cannot reach the store at ", host_, ":", port_, " within ", timeout().count(),
              " ms: ", error, " (is rank 0 running, and are MASTER_ADDR/MASTER_PORT the same on every rank?)");
  // Greet first: the server answers nothing else before a HELLO with its token.
  Bytes msg;
  Bytes hello{wire::kHello};
  wire::put_string(hello, token_);
  wire::put_u32(msg, static_cast<uint32_t>(hello.size()));
  msg.insert(msg.end(), hello.begin(), hello.end());
  uint8_t answer[5] = {};
  bool ok = net::send_all(fd_, msg.data(), msg.size(), deadline) && net::recv_all(fd_, answer, 5, deadline);
  // The answer is one frame of one byte; anything else is not our server (and
  // reading on would leave the stream out of step).
  const bool one_byte = answer[0] == 1 && answer[1] == 0 && answer[2] == 0 && answer[3] == 0;
  if (ok && !one_byte) {
    net::close_fd(fd_);
    fail("TCPStore: ", host_, ":", port_,
         " answered the HELLO with a frame that is not one byte"
         " (is that port an anvil TCPStore?)");
  }
  if (!ok || answer[4] != 1) {
    net::close_fd(fd_);
    ANVIL_CHECK(ok, "TCPStore: the store at ", host_, ":", port_,
                " closed the connection or timed out during the HELLO"
                " (is it an anvil TCPStore, and is it over its connection limit?)");
    fail("TCPStore: the store at ", host_, ":", port_, " refused this process: its ANVIL_STORE_TOKEN ",
         token_.empty() ? "is unset here" : "differs from the one set here",
         " (set the same ANVIL_STORE_TOKEN on every rank, or on none)");
  }
}

Bytes TCPStore::call(const Bytes& request, const std::string& what, std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (fd_ < 0) connect_locked(deadline);
  Bytes msg;
  msg.reserve(request.size() + 4);
  wire::put_u32(msg, static_cast<uint32_t>(request.size()));
  msg.insert(msg.end(), request.begin(), request.end());
  bool timed_out = false;
  auto broken = [&](const char* stage) {
    // The connection may still carry a late reply: never reuse it.
    net::close_fd(fd_);
    if (timed_out)
      fail("TCPStore ", what, " at ", host_, ":", port_, ": timed out after ", timeout.count(), " ms while ", stage,
           " (a key that is never set means some rank did not get this far)");
    fail("TCPStore ", what, " at ", host_, ":", port_, ": connection lost while ", stage,
         " (did the process serving the store, rank 0, exit?)");
  };
  if (!net::send_all(fd_, msg.data(), msg.size(), deadline, &timed_out)) broken("sending the request");
  uint8_t len_bytes[4];
  if (!net::recv_all(fd_, len_bytes, 4, deadline, &timed_out)) broken("waiting for the reply");
  wire::Reader r(len_bytes, 4);
  uint32_t len = r.u32();
  if (len > wire::kMaxMessage) {
    net::close_fd(fd_);
    fail("TCPStore ", what, " at ", host_, ":", port_, ": reply of ", len, " bytes exceeds the limit of ",
         wire::kMaxMessage, " (is that port an anvil TCPStore?)");
  }
  Bytes reply(len);
  if (!reply.empty() && !net::recv_all(fd_, reply.data(), reply.size(), deadline, &timed_out))
    broken("reading the reply");
  bool is_write = request[0] == wire::kSet || request[0] == wire::kAdd;
  if (is_write && reply.size() == 1 && reply[0] == 0) {
    net::close_fd(fd_);  // the server closed its end
    fail("TCPStore ", what, " at ", host_, ":", port_,
         ": refused, the store is over its limit on stored bytes (see the server's log)");
  }
  return reply;
}

void TCPStore::set(const std::string& key, const Bytes& value) {
  Bytes req{wire::kSet};
  put_key(req, key);
  ANVIL_CHECK(value.size() + key.size() + 16 <= wire::kMaxMessage, "TCPStore: set('", key, "'): value of ",
              value.size(), " bytes exceeds the limit of ", wire::kMaxMessage);
  wire::put_blob(req, value.data(), value.size());
  call(req, "set('" + key + "')", timeout());
}

Bytes TCPStore::get(const std::string& key) {
  Bytes req{wire::kGet};
  put_key(req, key);
  return call(req, "get('" + key + "')", timeout());
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  Bytes req{wire::kAdd};
  put_key(req, key);
  wire::put_i64(req, delta);
  Bytes reply = call(req, "add('" + key + "')", timeout());
  wire::Reader r(reply.data(), reply.size());
  return r.i64();
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  Bytes req{wire::kCheck};
  wire::put_u32(req, static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) put_key(req, k);
  Bytes reply = call(req, "check(" + keys_text(keys) + ")", timeout());
  return !reply.empty() && reply[0] == 1;
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  Bytes req{wire::kWait};
  wire::put_u32(req, static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) put_key(req, k);
  call(req, "wait(" + keys_text(keys) + ")", timeout);
}

}  // namespace anvil::distributed
