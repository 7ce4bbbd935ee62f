#include "distributed/parameter_server/client.h"

#include <cstring>

#include "core/autograd/grad_mode.h"
#include "core/base/error.h"
#include "core/factory.h"
#include "distributed/net/socket.h"
#include "distributed/parameter_server/wire.h"

namespace anvil::distributed::ps {

namespace {

std::string where(const ServerAddress& a, size_t index) {
  return "PS " + std::to_string(index) + " (" + a.host + ":" + std::to_string(a.port) + ")";
}

// The reply to a request, or anvil::Error naming the PS and what went wrong
// (an ERROR frame's text included).
Frame expect_reply(int fd, const std::string& who, FrameType request, int64_t shard_numel,
                   std::chrono::milliseconds timeout) {
  Frame f;
  const auto r = recv_frame(fd, &f, shard_numel, Clock::now() + timeout, timeout);
  ANVIL_CHECK(r.status == RecvStatus::Ok, "parameter server client: no reply from ", who, " to ",
              frame_type_name(request), ": ", r.why);
  if (f.type == FrameType::Error)
    fail("parameter server client: ", who, " refused ", frame_type_name(request), ": ",
         std::string(f.payload.begin(), f.payload.end()));
  return f;
}

}  // namespace

ParameterServerClient::ParameterServerClient(std::vector<Tensor> params, const ShardPlan& plan, ClientOptions options)
    : params_(std::move(params)), plan_(plan), options_(std::move(options)) {
  ANVIL_CHECK(params_.size() == plan_.numels.size(), "parameter server client: the plan covers ", plan_.numels.size(),
              " parameters but the model has ", params_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    ANVIL_CHECK(params_[i].numel() == plan_.numels[i], "parameter server client: parameter ", i, " has ",
                params_[i].numel(), " elements, the plan says ", plan_.numels[i]);
  ANVIL_CHECK(static_cast<int>(options_.servers.size()) == plan_.num_ps,
              "parameter server client: ", options_.servers.size(), " server addresses for a plan over ", plan_.num_ps,
              " PS ranks");
  ANVIL_CHECK(options_.worker_id >= 0, "parameter server client: worker_id must be at least 0, got ",
              options_.worker_id);
  versions_.assign(options_.servers.size(), 0);
  const auto deadline = Clock::now() + options_.connect_timeout;
  try {
    for (size_t s = 0; s < options_.servers.size(); ++s) {
      const ServerAddress& a = options_.servers[s];
      std::string error;
      const int fd = net::connect_until(a.host, a.port, deadline, &error);
      ANVIL_CHECK(fd >= 0, "parameter server client: cannot reach ", where(a, s), " within ",
                  options_.connect_timeout.count(), " ms: ", error);
      fds_.push_back(fd);
      ANVIL_CHECK(send_frame(fd, FrameType::Hello, plan_.fingerprint(), static_cast<uint64_t>(options_.worker_id),
                             nullptr, 0, Clock::now() + options_.reply_timeout),
                  "parameter server client: cannot send HELLO to ", where(a, s));
      const Frame w = expect_reply(fd, where(a, s), FrameType::Hello, 0, options_.reply_timeout);
      ANVIL_CHECK(w.type == FrameType::Welcome && static_cast<int64_t>(w.arg) == plan_.shard_numel(static_cast<int>(s)),
                  "parameter server client: ", where(a, s), " answered HELLO with ", frame_type_name(w.type),
                  " for a shard of ", w.arg, " elements (expected ", plan_.shard_numel(static_cast<int>(s)), ")");
      versions_[s] = static_cast<int64_t>(w.version);
    }
  } catch (...) {
    abort();
    throw;
  }
}

ParameterServerClient::~ParameterServerClient() { abort(); }

void ParameterServerClient::abort() {
  for (int& fd : fds_) net::close_fd(fd);
  fds_.clear();
}

void ParameterServerClient::pull() {
  ANVIL_CHECK(!fds_.empty(), "parameter server client: pull after finish() or abort()");
  // Every request goes out first, then the replies are read: the PS ranks
  // copy their shards at the same time.
  for (size_t s = 0; s < fds_.size(); ++s)
    ANVIL_CHECK(send_frame(fds_[s], FrameType::Pull, 0, 0, nullptr, 0, Clock::now() + options_.reply_timeout),
                "parameter server client: cannot send PULL to ", where(options_.servers[s], s));
  NoGradGuard no_grad;
  for (size_t s = 0; s < fds_.size(); ++s) {
    const int64_t numel = plan_.shard_numel(static_cast<int>(s));
    const Frame f =
        expect_reply(fds_[s], where(options_.servers[s], s), FrameType::Pull, numel, options_.reply_timeout);
    ANVIL_CHECK(f.type == FrameType::Params && f.payload.size() == static_cast<size_t>(numel) * sizeof(float),
                "parameter server client: ", where(options_.servers[s], s), " answered PULL with ",
                frame_type_name(f.type), " of ", f.payload.size(), " bytes");
    versions_[s] = static_cast<int64_t>(f.version);
    bytes_moved_ += f.payload.size();
    size_t offset = 0;
    for (int i : plan_.owned[s]) {
      Tensor& p = params_[static_cast<size_t>(i)];
      Tensor values = anvil::empty(p.shape(), DType::Float32);
      std::memcpy(values.data<float>(), f.payload.data() + offset, static_cast<size_t>(p.numel()) * sizeof(float));
      offset += static_cast<size_t>(p.numel()) * sizeof(float);
      p.detach().copy_(values);
    }
  }
}

PushResult ParameterServerClient::push() {
  ANVIL_CHECK(!fds_.empty(), "parameter server client: push after finish() or abort()");
  for (size_t s = 0; s < fds_.size(); ++s) {
    std::vector<float> flat(static_cast<size_t>(plan_.shard_numel(static_cast<int>(s))), 0.0f);
    size_t offset = 0;
    for (int i : plan_.owned[s]) {
      const Tensor& p = params_[static_cast<size_t>(i)];
      const Tensor g = p.grad();
      if (g.defined()) {
        const auto v = g.detach().to_vector<float>();
        std::memcpy(flat.data() + offset, v.data(), v.size() * sizeof(float));
      }
      offset += static_cast<size_t>(p.numel());
    }
    ANVIL_CHECK(send_frame(fds_[s], FrameType::Push, static_cast<uint64_t>(versions_[s]), 0, flat.data(),
                           flat.size() * sizeof(float), Clock::now() + options_.reply_timeout),
                "parameter server client: cannot send PUSH to ", where(options_.servers[s], s));
    bytes_moved_ += flat.size() * sizeof(float);
  }
  PushResult result;
  for (size_t s = 0; s < fds_.size(); ++s) {
    const Frame f = expect_reply(fds_[s], where(options_.servers[s], s), FrameType::Push, 0, options_.reply_timeout);
    ANVIL_CHECK(f.type == FrameType::Applied || f.type == FrameType::Stale,
                "parameter server client: ", where(options_.servers[s], s), " answered PUSH with ",
                frame_type_name(f.type));
    if (f.type == FrameType::Applied) {
      ++result.applied;
      result.max_applied_staleness = std::max(result.max_applied_staleness, static_cast<int64_t>(f.arg));
    } else {
      ++result.refused;
    }
    result.max_staleness = std::max(result.max_staleness, static_cast<int64_t>(f.arg));
  }
  return result;
}

void ParameterServerClient::finish() {
  for (size_t s = 0; s < fds_.size(); ++s) {
    ANVIL_CHECK(send_frame(fds_[s], FrameType::Bye, 0, 0, nullptr, 0, Clock::now() + options_.reply_timeout),
                "parameter server client: cannot send BYE to ", where(options_.servers[s], s));
    expect_reply(fds_[s], where(options_.servers[s], s), FrameType::Bye, 0, options_.reply_timeout);
  }
  abort();
}

}  // namespace anvil::distributed::ps
