#include "distributed/parameter_server/server.h"

#include <cstring>
#include <iostream>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/autograd/grad_mode.h"
#include "core/base/error.h"
#include "core/factory.h"
#include "distributed/net/socket.h"

namespace anvil::distributed::ps {

ParameterServer::ParameterServer(const std::vector<Tensor>& all_params, const ShardPlan& plan, int ps_index,
                                 ServerOptions options)
    : plan_(plan), ps_index_(ps_index), options_(std::move(options)), shard_numel_(plan.shard_numel(ps_index)) {
  ANVIL_CHECK(all_params.size() == plan_.numels.size(), "ParameterServer: the plan covers ", plan_.numels.size(),
              " parameters but ", all_params.size(), " were given");
  ANVIL_CHECK(options_.num_workers >= 1, "ParameterServer: num_workers must be at least 1, got ", options_.num_workers);
  ANVIL_CHECK(options_.max_staleness >= 0, "ParameterServer: max_staleness must be at least 0, got ",
              options_.max_staleness);
  ANVIL_CHECK(static_cast<bool>(options_.make_optimizer),
              "ParameterServer: ServerOptions::make_optimizer is required (e.g. SGD or AdamW over the shard)");
  for (int i : plan_.owned[static_cast<size_t>(ps_index_)]) {
    const Tensor& p = all_params[static_cast<size_t>(i)];
    ANVIL_CHECK(p.numel() == plan_.numels[static_cast<size_t>(i)], "ParameterServer: parameter ", i, " has ", p.numel(),
                " elements, the plan says ", plan_.numels[static_cast<size_t>(i)]);
    // float32 on the CPU whatever the workers use: the wire carries float32.
    Tensor mine = anvil::empty(p.shape(), DType::Float32);
    {
      NoGradGuard no_grad;
      mine.copy_(p.detach());
    }
    mine.requires_grad_(true);
    params_.push_back(mine);
  }
  if (!params_.empty()) optimizer_ = options_.make_optimizer(params_);
  slots_.assign(static_cast<size_t>(options_.num_workers), Slot::Empty);
  vacant_since_.assign(slots_.size(), Clock::time_point{});
  ever_joined_.assign(slots_.size(), false);
  pushed_.assign(slots_.size(), false);
  pending_sum_.assign(static_cast<size_t>(shard_numel_), 0.0f);
  stats_.staleness_histogram.assign(static_cast<size_t>(options_.max_staleness) + 1, 0);
  listen_fd_ = net::listen_on(options_.port);
  port_ = net::local_port(listen_fd_);
  acceptor_ = std::thread([this] { accept_loop(); });
}

ParameterServer::~ParameterServer() { stop(); }

void ParameterServer::log(const std::string& line) const {
  std::cerr << "[anvil PS " + std::to_string(ps_index_) + "] " + line + "\n" << std::flush;
}

void ParameterServer::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && listen_fd_ < 0) return;
    stopping_ = true;
    // Wakes every handler blocked in poll; each then closes its own fd.
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  changed_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& t : handlers_)
    if (t.joinable()) t.join();
  net::close_fd(listen_fd_);
}

void ParameterServer::accept_loop() {
  // Workers are few; more connections than this are strays and are refused
  // at once, so no peer can make the server hold unbounded threads.
  const size_t max_connections = static_cast<size_t>(options_.num_workers) * 2 + 8;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || open_fds_.size() >= max_connections) {
      ::close(fd);
      continue;
    }
    open_fds_.insert(fd);
    handlers_.emplace_back([this, fd] { serve(fd); });
  }
}

namespace {

void reply_error(int fd, const std::string& why, std::chrono::milliseconds timeout) {
  send_frame(fd, FrameType::Error, 0, 0, why.data(), why.size(), Clock::now() + timeout);
}

}  // namespace

void ParameterServer::serve(int fd) {
  int worker = -1;
  Frame f;
  auto r = recv_frame(fd, &f, shard_numel_, Clock::now() + options_.message_timeout, options_.message_timeout);
  std::string refusal;
  if (r.status != RecvStatus::Ok) {
    refusal = "before HELLO: " + r.why;
  } else if (f.type != FrameType::Hello) {
    refusal = std::string("the first frame must be HELLO, got ") + frame_type_name(f.type);
  } else if (f.version != plan_.fingerprint()) {
    refusal = "the worker's model layout (fingerprint " + std::to_string(f.version) + ") differs from the server's (" +
              std::to_string(plan_.fingerprint()) +
              "): every rank must build the same model and use the same number of PS ranks";
  } else if (f.arg >= slots_.size()) {
    refusal = "worker id " + std::to_string(f.arg) + " is not in 0.." + std::to_string(slots_.size() - 1);
  }
  uint64_t version = 0;
  bool rejoined = false;
  if (refusal.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    const int w = static_cast<int>(f.arg);
    if (slots_[static_cast<size_t>(w)] == Slot::Live) {
      refusal = "worker id " + std::to_string(w) + " is already connected";
    } else if (slots_[static_cast<size_t>(w)] == Slot::Finished) {
      refusal = "worker id " + std::to_string(w) + " has already finished";
    } else {
      rejoined = ever_joined_[static_cast<size_t>(w)];
      if (rejoined) ++stats_.rejoins;
      ever_joined_[static_cast<size_t>(w)] = true;
      slots_[static_cast<size_t>(w)] = Slot::Live;
      pushed_[static_cast<size_t>(w)] = false;
      worker = w;
      version = static_cast<uint64_t>(version_);
    }
  }
  if (!refusal.empty()) {
    log("refusing a connection: " + refusal);
    reply_error(fd, refusal, options_.message_timeout);
  } else {
    changed_.notify_all();
    if (rejoined) log("worker " + std::to_string(worker) + " joined at version " + std::to_string(version));
    bool open = send_frame(fd, FrameType::Welcome, version, static_cast<uint64_t>(shard_numel_), nullptr, 0,
                           Clock::now() + options_.message_timeout);
    std::string lost = open ? "" : "could not send WELCOME";
    while (open) {
      r = recv_frame(fd, &f, shard_numel_, Clock::now() + options_.idle_timeout, options_.message_timeout);
      if (r.status != RecvStatus::Ok) {
        lost = r.why;
        break;
      }
      if (f.type == FrameType::Pull) {
        open = on_pull(fd);
        if (!open) lost = "could not send PARAMS";
      } else if (f.type == FrameType::Push) {
        open = on_push(fd, worker, f);
        if (!open) lost = "push refused or reply not delivered";
      } else if (f.type == FrameType::Bye) {
        // The reply goes out before the slot counts as finished: the last
        // BYE may end the job, and the process with it.
        uint64_t v;
        {
          std::lock_guard<std::mutex> lock(mu_);
          v = static_cast<uint64_t>(version_);
        }
        send_frame(fd, FrameType::Applied, v, 0, nullptr, 0, Clock::now() + options_.message_timeout);
        {
          std::lock_guard<std::mutex> lock(mu_);
          slots_[static_cast<size_t>(worker)] = Slot::Finished;
          if (options_.mode == Mode::Sync) maybe_finish_sync_step_locked();
        }
        changed_.notify_all();
        break;
      } else {
        lost = std::string("unexpected ") + frame_type_name(f.type) + " frame";
        reply_error(fd, lost, options_.message_timeout);
        break;
      }
    }
    if (!lost.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      release_slot(worker, lost);
    }
    changed_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mu_);
  open_fds_.erase(fd);
  ::close(fd);
}

void ParameterServer::release_slot(int worker, const std::string& why) {
  if (slots_[static_cast<size_t>(worker)] != Slot::Live) return;
  slots_[static_cast<size_t>(worker)] = Slot::Vacant;
  vacant_since_[static_cast<size_t>(worker)] = Clock::now();
  if (stopping_) return;
  ++stats_.workers_lost;
  log("dropping worker " + std::to_string(worker) + ": " + why + " (its slot waits for a restart)");
  // The step it held up may now be complete without it.
  if (options_.mode == Mode::Sync) maybe_finish_sync_step_locked();
}

bool ParameterServer::on_pull(int fd) {
  std::vector<float> flat(static_cast<size_t>(shard_numel_));
  uint64_t v;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size_t offset = 0;
    for (const Tensor& p : params_) {
      std::memcpy(flat.data() + offset, p.data<float>(), static_cast<size_t>(p.numel()) * sizeof(float));
      offset += static_cast<size_t>(p.numel());
    }
    v = static_cast<uint64_t>(version_);
    stats_.bytes_sent += flat.size() * sizeof(float);
  }
  return send_frame(fd, FrameType::Params, v, 0, flat.data(), flat.size() * sizeof(float),
                    Clock::now() + options_.message_timeout);
}

void ParameterServer::apply_locked(const float* grad, float scale) {
  size_t offset = 0;
  for (Tensor& p : params_) {
    Tensor g = anvil::empty(p.shape(), DType::Float32);
    float* out = g.data<float>();
    for (int64_t i = 0; i < p.numel(); ++i) out[i] = grad[offset + static_cast<size_t>(i)] * scale;
    p.set_grad(g);
    offset += static_cast<size_t>(p.numel());
  }
  if (optimizer_) optimizer_->step();
  ++version_;
}

void ParameterServer::maybe_finish_sync_step_locked() {
  if (pending_count_ == 0) return;
  for (size_t w = 0; w < slots_.size(); ++w) {
    // A worker that has not joined yet holds the step too: otherwise the
    // first workers up would take steps alone and the result would differ
    // from one process on the whole batch.
    if (slots_[w] == Slot::Empty) return;
    if (slots_[w] == Slot::Live && !pushed_[w]) return;
  }
  apply_locked(pending_sum_.data(), 1.0f / static_cast<float>(pending_count_));
  stats_.pushes_applied += pending_count_;
  stats_.staleness_histogram[0] += pending_count_;
  std::fill(pending_sum_.begin(), pending_sum_.end(), 0.0f);
  std::fill(pushed_.begin(), pushed_.end(), false);
  pending_count_ = 0;
  changed_.notify_all();
}

bool ParameterServer::on_push(int fd, int worker, const Frame& f) {
  const size_t expected = static_cast<size_t>(shard_numel_) * sizeof(float);
  std::string error;
  FrameType reply = FrameType::Applied;
  uint64_t reply_version = 0, staleness = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    const auto pushed_at = static_cast<int64_t>(f.version);
    const float* grad = reinterpret_cast<const float*>(f.payload.data());
    if (f.payload.size() != expected) {
      error =
          "PUSH of " + std::to_string(f.payload.size()) + " bytes; this PS's shard takes " + std::to_string(expected);
    } else if (pushed_at > version_ || f.version > static_cast<uint64_t>(INT64_MAX)) {
      error =
          "PUSH for version " + std::to_string(f.version) + " but the server is only at " + std::to_string(version_);
    } else if (options_.mode == Mode::Sync) {
      if (pushed_at != version_) {
        error = "synchronous PUSH for version " + std::to_string(pushed_at) + " but the step is " +
                std::to_string(version_) + " (pull before every step)";
      } else if (pushed_[static_cast<size_t>(worker)]) {
        error = "worker " + std::to_string(worker) + " pushed twice in step " + std::to_string(version_);
      } else {
        stats_.bytes_received += expected;
        for (size_t i = 0; i < pending_sum_.size(); ++i) pending_sum_[i] += grad[i];
        pushed_[static_cast<size_t>(worker)] = true;
        ++pending_count_;
        maybe_finish_sync_step_locked();
        const bool stepped =
            changed_.wait_for(lock, options_.idle_timeout, [&] { return version_ > pushed_at || stopping_; });
        if (!stepped)
          error = "the synchronous step waited longer than idle_timeout for the other workers";
        else if (version_ <= pushed_at)
          return false;  // stopping
        reply_version = static_cast<uint64_t>(version_);
      }
    } else {
      stats_.bytes_received += expected;
      const int64_t stale = version_ - pushed_at;
      staleness = static_cast<uint64_t>(stale);
      if (stale > options_.max_staleness) {
        ++stats_.stale_refused;
        reply = FrameType::Stale;
      } else {
        apply_locked(grad, 1.0f);
        ++stats_.pushes_applied;
        ++stats_.staleness_histogram[static_cast<size_t>(stale)];
        stats_.max_applied_staleness = std::max(stats_.max_applied_staleness, stale);
      }
      reply_version = static_cast<uint64_t>(version_);
    }
  }
  if (!error.empty()) {
    log("worker " + std::to_string(worker) + ": " + error);
    reply_error(fd, error, options_.message_timeout);
    return false;
  }
  changed_.notify_all();
  return send_frame(fd, reply, reply_version, staleness, nullptr, 0, Clock::now() + options_.message_timeout);
}

bool ParameterServer::done_locked() const {
  const auto now = Clock::now();
  for (size_t w = 0; w < slots_.size(); ++w) {
    if (slots_[w] == Slot::Finished) continue;
    if (slots_[w] == Slot::Vacant && now - vacant_since_[w] >= options_.rejoin_grace) continue;
    return false;
  }
  return true;
}

void ParameterServer::wait_until_done(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  // Polled in short waits as well: a vacant slot's grace runs out by itself.
  while (!done_locked()) {
    if (Clock::now() >= deadline) {
      std::string state;
      for (size_t w = 0; w < slots_.size(); ++w) {
        const char* names[] = {"never connected", "still training", "finished", "vacant"};
        state += " worker " + std::to_string(w) + ": " + names[static_cast<int>(slots_[w])] + ";";
      }
      fail("parameter server ", ps_index_, ": the job did not finish within ", timeout.count(), " ms (at version ",
           version_, ";", state, ")");
    }
    changed_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

ServerStats ParameterServer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  ServerStats s = stats_;
  s.version = version_;
  return s;
}

std::vector<Tensor> ParameterServer::parameters() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Tensor> out;
  for (const Tensor& p : params_) {
    Tensor c = anvil::empty(p.shape(), DType::Float32);
    std::memcpy(c.data<float>(), p.data<float>(), static_cast<size_t>(p.numel()) * sizeof(float));
    out.push_back(c);
  }
  return out;
}

}  // namespace anvil::distributed::ps
