#include "distributed/tcp_store.h"

#include "core/base/error.h"
#include "distributed/socket.h"
#include "distributed/tcp_store_protocol.h"
#include "distributed/tcp_store_server.h"

namespace anvil::distributed {

namespace {
std::string keys_text(const std::vector<std::string>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? ", '" : "'") + keys[i] + "'";
  return s;
}
}  // namespace

TCPStore::TCPStore(const TCPStoreOptions& options)
    : Store(options.timeout), host_(options.host), port_(options.port) {
  if (options.is_server) {
    server_ = std::make_unique<TCPStoreServer>(options.port);
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
  ANVIL_CHECK(fd_ >= 0, "TCPStore: cannot reach the store at ", host_, ":", port_, " within ",
              timeout().count(), " ms: ", error,
              " (is rank 0 running, and are MASTER_ADDR/MASTER_PORT the same on every rank?)");
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
      fail("TCPStore ", what, " at ", host_, ":", port_, ": timed out after ", timeout.count(), " ms while ",
           stage, " (a key that is never set means some rank did not get this far)");
    fail("TCPStore ", what, " at ", host_, ":", port_, ": connection lost while ", stage,
         " (did the process serving the store, rank 0, exit?)");
  };
  if (!net::send_all(fd_, msg.data(), msg.size(), deadline, &timed_out)) broken("sending the request");
  uint8_t len_bytes[4];
  if (!net::recv_all(fd_, len_bytes, 4, deadline, &timed_out)) broken("waiting for the reply");
  wire::Reader r(len_bytes, 4);
  Bytes reply(r.u32());
  if (!reply.empty() && !net::recv_all(fd_, reply.data(), reply.size(), deadline, &timed_out))
    broken("reading the reply");
  return reply;
}

void TCPStore::set(const std::string& key, const Bytes& value) {
  Bytes req{wire::kSet};
  wire::put_string(req, key);
  wire::put_blob(req, value.data(), value.size());
  call(req, "set('" + key + "')", timeout());
}

Bytes TCPStore::get(const std::string& key) {
  Bytes req{wire::kGet};
  wire::put_string(req, key);
  return call(req, "get('" + key + "')", timeout());
}

int64_t TCPStore::add(const std::string& key, int64_t delta) {
  Bytes req{wire::kAdd};
  wire::put_string(req, key);
  wire::put_i64(req, delta);
  Bytes reply = call(req, "add('" + key + "')", timeout());
  wire::Reader r(reply.data(), reply.size());
  return r.i64();
}

bool TCPStore::check(const std::vector<std::string>& keys) {
  Bytes req{wire::kCheck};
  wire::put_u32(req, static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) wire::put_string(req, k);
  Bytes reply = call(req, "check(" + keys_text(keys) + ")", timeout());
  return !reply.empty() && reply[0] == 1;
}

void TCPStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  Bytes req{wire::kWait};
  wire::put_u32(req, static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) wire::put_string(req, k);
  call(req, "wait(" + keys_text(keys) + ")", timeout);
}

}  // namespace anvil::distributed
