#include "distributed/process_group/gloo/gloo_process_group.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>
#include <signal.h>
#include <unistd.h>

#include "core/base/error.h"
#include "distributed/net/socket.h"
#include "distributed/process_group/gloo/gloo_reduce.h"
#include "distributed/process_group/gloo/gloo_store.h"

namespace anvil::distributed {

using Clock = std::chrono::steady_clock;
using gloo_detail::divide_in_place;
using gloo_detail::reduce_func;

// What each rank says it is about to do; compared across ranks before a
// collective when options.check_consistency is on.
struct GlooProcessGroup::Header {
  enum Op : int64_t { kAllReduce = 1, kBroadcast, kAllGather, kReduceScatter, kBarrier, kSend, kAllToAll };
  std::array<int64_t, 4> v{};  // op, dtype, numel, extra (ReduceOp or root)
};

namespace {

// Gloo's TCP transport writes to its peers without MSG_NOSIGNAL, so a write
// to a rank that has died raises SIGPIPE, whose default action kills this
// process without a word (seen: a survivor of a killed rank vanishing). With
// SIGPIPE ignored the write fails with EPIPE and the group reports the dead
// peer as an error. A handler the application installed is left alone.
void ignore_sigpipe_unless_handled() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
  });
}

const char* op_name(int64_t op) {
  switch (op) {
    case 1:
      return "all_reduce";
    case 2:
      return "broadcast";
    case 3:
      return "all_gather";
    case 4:
      return "reduce_scatter";
    case 5:
      return "barrier";
    case 6:
      return "send";
    case 7:
      return "all_to_all";
  }
  return "unknown op";
}

std::string describe(const std::array<int64_t, 4>& h) {
  std::string s = op_name(h[0]);
  if (h[0] == 5) return s;
  s += std::string(" of ") + dtype_name(static_cast<DType>(h[1]));
  if (h[0] == 7) return s;  // sizes differ per rank; checked separately
  s += " numel " + std::to_string(h[2]);
  if (h[0] == 1 || h[0] == 4) s += std::string(" op ") + to_string(static_cast<ReduceOp>(h[3]));
  if (h[0] == 2) s += " root " + std::to_string(h[3]);
  return s;
}

bool is_loopback(const std::string& host) {
  return host.empty() || host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// Where this rank's Gloo transport listens when nobody said. Across machines
// it is the address of the interface that reaches MASTER_ADDR: the peers
// reach the master over that network, so they reach us there too. The
// machine's hostname is no answer: it often resolves to 127.0.1.1 or
// 127.0.0.1 (Debian's /etc/hosts), and it is the same in every network
// namespace of a machine.
std::string default_gloo_hostname() {
  const char* master = std::getenv("MASTER_ADDR");
  if (is_loopback(master ? master : "")) return "127.0.0.1";
  std::string why;
  std::string local = net::local_address_towards(master, &why);
  ANVIL_CHECK(!local.empty(), "GlooProcessGroup: cannot find the address this machine reaches MASTER_ADDR=", master,
              " from: ", why, " (set ProcessGroupOptions::gloo_hostname or ANVIL_GLOO_IFNAME)");
  return local;
}

// Element size of a dtype as the unsigned type Gloo copies it with (Gloo only
// uses sizeof(T) of the template argument; the reduce function knows the
// real type).
template <typename F> void with_raw_type(size_t itemsize, F&& f) {
  switch (itemsize) {
    case 1:
      f(uint8_t{});
      return;
    case 2:
      f(uint16_t{});
      return;
    case 4:
      f(uint32_t{});
      return;
    case 8:
      f(uint64_t{});
      return;
  }
  fail("GlooProcessGroup: unsupported element size ", itemsize);
}

// Slots for point-to-point messages: a prefix no Gloo collective uses
// (theirs are 0x01..0x08 in the top byte), then the user's tag, then one bit
// for header (0) or data (1).
uint64_t p2p_slot(int tag, int part) {
  return (uint64_t{0x10} << 56) | (static_cast<uint64_t>(tag) << 1) | static_cast<uint64_t>(part);
}

}  // namespace

// A collective's Work: completed by the worker thread.
class GlooProcessGroup::QueuedWork : public Work {
 public:
  void wait() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  bool is_completed() override {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }
  void finish(std::exception_ptr error) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
      error_ = std::move(error);
    }
    cv_.notify_all();
  }
  std::string name;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

// A send or recv: posted to Gloo when created, waited for in wait().
class GlooProcessGroup::P2PWork : public Work {
 public:
  P2PWork(GlooProcessGroup* pg, bool is_recv, int peer, int tag, Tensor tensor)
      : pg_(pg), is_recv_(is_recv), peer_(peer), tag_(tag), tensor_(std::move(tensor)) {}

  void post() {
    mine_ = {Header::kSend, static_cast<int64_t>(tensor_.dtype()), tensor_.numel(), tag_};
    auto& ctx = pg_->context_;
    if (is_recv_) {
      header_buf_ = ctx->createUnboundBuffer(peer_header_.data(), sizeof(int64_t) * 4);
      data_buf_ = ctx->createUnboundBuffer(tensor_.data_ptr(), tensor_.nbytes());
      header_buf_->recv(peer_, p2p_slot(tag_, 0));
      if (tensor_.nbytes() > 0) data_buf_->recv(peer_, p2p_slot(tag_, 1));
    } else {
      header_buf_ = ctx->createUnboundBuffer(mine_.data(), sizeof(int64_t) * 4);
      data_buf_ = ctx->createUnboundBuffer(tensor_.data_ptr(), tensor_.nbytes());
      header_buf_->send(peer_, p2p_slot(tag_, 0));
      if (tensor_.nbytes() > 0) data_buf_->send(peer_, p2p_slot(tag_, 1));
    }
  }

  void wait() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!done_) {
      done_ = true;
      try {
        run_wait();
      } catch (...) {
        error_ = std::current_exception();
      }
    }
    if (error_) std::rethrow_exception(error_);
  }
  bool is_completed() override {
    std::lock_guard<std::mutex> lock(mu_);
    return done_;
  }

 private:
  std::string what() const {
    return pg_->prefix(is_recv_ ? "recv from rank " + std::to_string(peer_) : "send to rank " + std::to_string(peer_)) +
           "(tag " + std::to_string(tag_) + ", " + dtype_name(tensor_.dtype()) + " numel " +
           std::to_string(tensor_.numel()) + "): ";
  }

  // Keeps the buffers (and the memory Gloo may still write) alive with the
  // group, and stops the group: its connections now carry unread bytes.
  void abandon(const std::string& reason) {
    auto keep = std::make_shared<std::tuple<std::unique_ptr<gloo::transport::UnboundBuffer>,
                                            std::unique_ptr<gloo::transport::UnboundBuffer>, Tensor>>(
        std::move(header_buf_), std::move(data_buf_), tensor_);
    {
      std::lock_guard<std::mutex> lock(pg_->mu_);
      pg_->graveyard_.push_back(keep);
    }
    pg_->mark_broken(reason);
  }

  void run_wait() {
    auto timeout = pg_->options_.timeout;
    auto deadline = Clock::now() + timeout;
    auto left = [&] {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      return std::max(ms, std::chrono::milliseconds(1));
    };
    try {
      if (is_recv_) {
        header_buf_->waitRecv(left());
        if (peer_header_ != mine_) {
          std::string reason = what() + "the sender sent " + dtype_name(static_cast<DType>(peer_header_[1])) +
                               " numel " + std::to_string(peer_header_[2]) + " (tag " +
                               std::to_string(peer_header_[3]) + "); every send must match its recv in dtype and numel";
          abandon(reason);
          fail(reason);
        }
        if (tensor_.nbytes() > 0) data_buf_->waitRecv(left());
      } else {
        header_buf_->waitSend(left());
        if (tensor_.nbytes() > 0) data_buf_->waitSend(left());
      }
    } catch (const gloo::Exception& e) {
      std::string reason = what() + "Gloo: " + e.what() + " (timeout " + std::to_string(timeout.count()) +
                           " ms; did the peer die, or never post the matching " + (is_recv_ ? "send" : "recv") + "?)";
      abandon(reason);
      fail(reason);
    }
  }

  GlooProcessGroup* pg_;
  bool is_recv_;
  int peer_;
  int tag_;
  Tensor tensor_;
  std::array<int64_t, 4> mine_{};
  std::array<int64_t, 4> peer_header_{};
  std::unique_ptr<gloo::transport::UnboundBuffer> header_buf_;
  std::unique_ptr<gloo::transport::UnboundBuffer> data_buf_;
  std::mutex mu_;
  bool done_ = false;
  std::exception_ptr error_;
};

GlooProcessGroup::GlooProcessGroup(std::shared_ptr<Store> store, int rank, int size, const ProcessGroupOptions& options,
                                   const std::string& store_prefix)
    : ProcessGroup(rank, size), options_(options), store_(std::move(store)) {
  ignore_sigpipe_unless_handled();
  ANVIL_CHECK(store_ != nullptr, "GlooProcessGroup: no store");
  ANVIL_CHECK(size >= 1 && rank >= 0 && rank < size, "GlooProcessGroup: rank ", rank, " is not in [0, ", size, ")");
  ANVIL_CHECK(options.timeout.count() > 0, "GlooProcessGroup: the timeout must be positive, got ",
              options.timeout.count(), " ms");
  gloo::transport::tcp::attr attr;
  if (const char* iface = std::getenv("ANVIL_GLOO_IFNAME"); iface && *iface)
    attr.iface = iface;
  else
    attr.hostname = options.gloo_hostname.empty() ? default_gloo_hostname() : options.gloo_hostname;
  try {
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(options.timeout);
    GlooStore gloo_store(store_, store_prefix);
    context->connectFullMesh(gloo_store, device);
    context_ = std::move(context);
  } catch (const gloo::Exception& e) {
    fail("GlooProcessGroup (rank ", rank, " of ", size, "): connecting to the other ranks failed: ", e.what(),
         " (listening on '", attr.hostname.empty() ? attr.iface : attr.hostname,
         "'; set ProcessGroupOptions::gloo_hostname or ANVIL_GLOO_IFNAME if peers cannot reach it)");
  }
  worker_ = std::thread([this] { worker_loop(); });
}

GlooProcessGroup::~GlooProcessGroup() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  context_.reset();
  // Abandoned receives (only after a send/recv error) are leaked on purpose:
  // Gloo's event loop may still complete into them while it closes the
  // connections, and nothing tells us when it is done with them.
  for (auto& kept : graveyard_) new std::shared_ptr<void>(std::move(kept));
}

std::string GlooProcessGroup::prefix(const std::string& op) const {
  return "GlooProcessGroup " + op + " (rank " + std::to_string(rank()) + " of " + std::to_string(size()) + ")";
}

std::string GlooProcessGroup::broken_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

void GlooProcessGroup::mark_broken(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.empty()) broken_ = reason;
}

WorkHandle GlooProcessGroup::enqueue(const std::string& name, std::function<void(uint32_t)> body) {
  auto work = std::make_shared<QueuedWork>();
  work->name = name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.empty())
      return completed_work(
          std::make_exception_ptr(Error(prefix(name) + ": the group is broken by an earlier error: " + broken_)));
    queue_.emplace_back(work, std::move(body));
  }
  cv_.notify_all();
  return work;
}

void GlooProcessGroup::worker_loop() {
  while (true) {
    std::shared_ptr<QueuedWork> work;
    std::function<void(uint32_t)> body;
    std::string broken;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping
      work = std::move(queue_.front().first);
      body = std::move(queue_.front().second);
      queue_.pop_front();
      broken = broken_;
      if (stopping_) broken = "the process group was destroyed before this operation ran";
    }
    if (!broken.empty()) {
      work->finish(
          std::make_exception_ptr(Error(prefix(work->name) + ": the group is broken by an earlier error: " + broken)));
      continue;
    }
    uint32_t tag = next_tag_;
    next_tag_ += 4;  // tag: the header exchange, tag + 1: the data, tag + 2 and 3: extra checks
    std::exception_ptr error;
    try {
      body(tag);
    } catch (const gloo::Exception& e) {
      // Gloo says which peer address failed; the hint says what it means.
      const std::string what = e.what();
      const std::string ms = std::to_string(options_.timeout.count()) + " ms";
      const bool timed_out = what.find("Timed out") != std::string::npos;
      std::string reason = prefix(work->name) + ": Gloo: " + what +
                           (timed_out ? " (timeout " + ms +
                                            "; a peer rank died, hangs, became unreachable, or stopped "
                                            "calling collectives in the same order)"
                                      : " (a peer rank's process or its host died, or the network to it failed; "
                                        "timeout " +
                                            ms + ")");
      mark_broken(reason);
      error = std::make_exception_ptr(Error(reason));
    } catch (...) {
      error = std::current_exception();
    }
    // The operation's tensors go before the caller learns it finished: a
    // program that ends as soon as a step fails (an error out of main) runs
    // the static destructors, the allocator's among them, and this thread
    // freeing a tensor after that crashed it (SIGSEGV instead of its status).
    body = nullptr;
    work->finish(error);
  }
}

void GlooProcessGroup::check_consistent(const std::string& name, const Header& mine, uint32_t tag) {
  if (!options_.check_consistency) return;
  std::vector<int64_t> all(4 * static_cast<size_t>(size()));
  Header in = mine;
  gloo::AllgatherOptions opts(context_);
  opts.setInput(in.v.data(), 4);
  opts.setOutput(all.data(), all.size());
  opts.setTag(tag);
  opts.setTimeout(options_.timeout);
  gloo::allgather(opts);
  bool same = true;
  for (int r = 0; r < size(); ++r)
    for (int k = 0; k < 4; ++k) same = same && all[4 * r + k] == all[k];
  if (same) return;
  std::string msg = prefix(name) +
                    ": the ranks disagree (every rank must call the same collective with the same "
                    "dtype, size and arguments):";
  for (int r = 0; r < size(); ++r) {
    std::array<int64_t, 4> h{all[4 * r], all[4 * r + 1], all[4 * r + 2], all[4 * r + 3]};
    msg += "\n  rank " + std::to_string(r) + ": " + describe(h);
  }
  fail(msg);  // every rank sees the same headers, so every rank fails the same way
}

namespace {

void check_cpu_tensor(const std::string& what, const Tensor& t, const char* role) {
  ANVIL_CHECK(t.defined(), what, ": the ", role, " tensor is undefined");
  ANVIL_CHECK(t.device().is_cpu(), what, ": the ", role, " tensor is on ", t.device().str(),
              "; the Gloo group takes CPU tensors (use the NCCL group, or make_process_group's "
              "auto backend, for CUDA tensors)");
  ANVIL_CHECK(t.is_contiguous(), what, ": the ", role, " tensor (shape ", t.shape_str(),
              ") is not contiguous; pass .contiguous() and copy the result back, since the "
              "collective writes the tensor's memory in place");
}

void check_reduce(const std::string& what, DType dtype, ReduceOp op) {
  ANVIL_CHECK(!(op == ReduceOp::Avg && !is_floating(dtype)), what, ": ReduceOp::Avg on ", dtype_name(dtype),
              " tensors is not supported (an integer average would truncate); use Sum and divide");
  reduce_func(dtype, op, what.c_str());  // throws for dtypes that cannot be reduced
}

}  // namespace

WorkHandle GlooProcessGroup::all_reduce(Tensor& tensor, ReduceOp op) {
  std::string what = prefix("all_reduce");
  check_cpu_tensor(what, tensor, "");
  check_reduce(what, tensor.dtype(), op);
  Tensor t = tensor;
  return enqueue("all_reduce", [this, t, op](uint32_t tag) {
    Header h;
    h.v = {Header::kAllReduce, static_cast<int64_t>(t.dtype()), t.numel(), static_cast<int64_t>(op)};
    check_consistent("all_reduce", h, tag);
    if (t.numel() == 0) return;
    with_raw_type(t.itemsize(), [&](auto raw) {
      using R = decltype(raw);
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(static_cast<R*>(t.data_ptr()), static_cast<size_t>(t.numel()));
      opts.setReduceFunction(reduce_func(t.dtype(), op, "all_reduce"));
      opts.setTag(tag + 1);
      opts.setTimeout(options_.timeout);
      gloo::allreduce(opts);
    });
    if (op == ReduceOp::Avg) divide_in_place(t.data_ptr(), t.dtype(), static_cast<size_t>(t.numel()), size());
    t.bump_version();
  });
}

WorkHandle GlooProcessGroup::broadcast(Tensor& tensor, int root) {
  std::string what = prefix("broadcast");
  check_cpu_tensor(what, tensor, "");
  ANVIL_CHECK(root >= 0 && root < size(), what, ": root ", root, " is not a rank in [0, ", size(), ")");
  Tensor t = tensor;
  return enqueue("broadcast", [this, t, root](uint32_t tag) {
    Header h;
    h.v = {Header::kBroadcast, static_cast<int64_t>(t.dtype()), t.numel(), root};
    check_consistent("broadcast", h, tag);
    if (t.numel() == 0 || size() == 1) return;
    with_raw_type(t.itemsize(), [&](auto raw) {
      using R = decltype(raw);
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(static_cast<R*>(t.data_ptr()), static_cast<size_t>(t.numel()));
      opts.setRoot(root);
      opts.setTag(tag + 1);
      opts.setTimeout(options_.timeout);
      gloo::broadcast(opts);
    });
    t.bump_version();
  });
}

WorkHandle GlooProcessGroup::all_gather(Tensor& output, const Tensor& input) {
  std::string what = prefix("all_gather");
  check_cpu_tensor(what, output, "output");
  check_cpu_tensor(what, input, "input");
  ANVIL_CHECK(output.dtype() == input.dtype(), what, ": output is ", dtype_name(output.dtype()), " but input is ",
              dtype_name(input.dtype()));
  ANVIL_CHECK(output.numel() == input.numel() * size(), what, ": output has ", output.numel(),
              " elements; expected world size ", size(), " x input numel ", input.numel(), " = ",
              input.numel() * size());
  Tensor out = output, in = input;
  return enqueue("all_gather", [this, out, in](uint32_t tag) {
    Header h;
    h.v = {Header::kAllGather, static_cast<int64_t>(in.dtype()), in.numel(), 0};
    check_consistent("all_gather", h, tag);
    if (in.numel() == 0) return;
    with_raw_type(in.itemsize(), [&](auto raw) {
      using R = decltype(raw);
      gloo::AllgatherOptions opts(context_);
      opts.setInput(static_cast<R*>(in.data_ptr()), static_cast<size_t>(in.numel()));
      opts.setOutput(static_cast<R*>(out.data_ptr()), static_cast<size_t>(out.numel()));
      opts.setTag(tag + 1);
      opts.setTimeout(options_.timeout);
      gloo::allgather(opts);
    });
    out.bump_version();
  });
}

WorkHandle GlooProcessGroup::reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op) {
  std::string what = prefix("reduce_scatter");
  check_cpu_tensor(what, output, "output");
  check_cpu_tensor(what, input, "input");
  ANVIL_CHECK(output.dtype() == input.dtype(), what, ": output is ", dtype_name(output.dtype()), " but input is ",
              dtype_name(input.dtype()));
  ANVIL_CHECK(input.numel() == output.numel() * size(), what, ": input has ", input.numel(),
              " elements; expected world size ", size(), " x output numel ", output.numel(), " = ",
              output.numel() * size());
  check_reduce(what, input.dtype(), op);
  Tensor out = output, in = input;
  return enqueue("reduce_scatter", [this, out, in, op](uint32_t tag) {
    Header h;
    h.v = {Header::kReduceScatter, static_cast<int64_t>(in.dtype()), in.numel(), static_cast<int64_t>(op)};
    check_consistent("reduce_scatter", h, tag);
    if (out.numel() == 0) return;
    // Gloo has no reduce-scatter on unbound buffers: all-reduce a copy and
    // keep this rank's chunk. Twice the traffic of a ring reduce-scatter;
    // simple and correct, and the CPU path is not where bandwidth matters.
    size_t chunk = out.nbytes();
    std::vector<uint8_t> scratch(in.nbytes());
    std::memcpy(scratch.data(), in.data_ptr(), in.nbytes());
    with_raw_type(in.itemsize(), [&](auto raw) {
      using R = decltype(raw);
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(reinterpret_cast<R*>(scratch.data()), static_cast<size_t>(in.numel()));
      opts.setReduceFunction(reduce_func(in.dtype(), op, "reduce_scatter"));
      opts.setTag(tag + 1);
      opts.setTimeout(options_.timeout);
      gloo::allreduce(opts);
    });
    std::memcpy(out.data_ptr(), scratch.data() + chunk * static_cast<size_t>(rank()), chunk);
    if (op == ReduceOp::Avg) divide_in_place(out.data_ptr(), out.dtype(), static_cast<size_t>(out.numel()), size());
    out.bump_version();
  });
}

WorkHandle GlooProcessGroup::all_to_all_single(Tensor& output, const Tensor& input,
                                               const std::vector<int64_t>& output_split_sizes,
                                               const std::vector<int64_t>& input_split_sizes) {
  std::string what = prefix("all_to_all");
  check_cpu_tensor(what, output, "output");
  check_cpu_tensor(what, input, "input");
  AllToAllPlan plan = plan_all_to_all(what, output, input, output_split_sizes, input_split_sizes, rank(), size());
  Tensor out = output, in = input;
  return enqueue("all_to_all", [this, out, in, plan](uint32_t tag) {
    Header h;
    h.v = {Header::kAllToAll, static_cast<int64_t>(in.dtype()), 0, 0};
    check_consistent("all_to_all", h, tag);
    check_all_to_all_counts(plan, tag + 2);
    // Gloo wants real buffers even where nothing moves.
    int64_t dummy = 0;
    void* in_ptr = in.nbytes() > 0 ? in.data_ptr() : &dummy;
    void* out_ptr = out.nbytes() > 0 ? out.data_ptr() : &dummy;
    with_raw_type(in.itemsize(), [&](auto raw) {
      using R = decltype(raw);
      gloo::AlltoallvOptions opts(context_);
      opts.setInput(static_cast<R*>(in_ptr), plan.send_counts);
      opts.setOutput(static_cast<R*>(out_ptr), plan.recv_counts);
      opts.setTag(tag + 1);
      opts.setTimeout(options_.timeout);
      gloo::alltoallv(opts);
    });
    out.bump_version();
  });
}

// Every rank learns every rank's counts, so a send that does not match its
// receive fails on every rank alike instead of hanging or reading short.
void GlooProcessGroup::check_all_to_all_counts(const AllToAllPlan& plan, uint32_t tag) {
  if (!options_.check_consistency) return;
  const size_t n = static_cast<size_t>(size());
  std::vector<int64_t> mine(plan.send_counts);
  mine.insert(mine.end(), plan.recv_counts.begin(), plan.recv_counts.end());
  std::vector<int64_t> all(2 * n * n);
  gloo::AllgatherOptions opts(context_);
  opts.setInput(mine.data(), mine.size());
  opts.setOutput(all.data(), all.size());
  opts.setTag(tag);
  opts.setTimeout(options_.timeout);
  gloo::allgather(opts);
  auto sends = [&](size_t from, size_t to) { return all[from * 2 * n + to]; };
  auto recvs = [&](size_t at, size_t from) { return all[at * 2 * n + n + from]; };
  std::string msg;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (sends(i, j) != recvs(j, i))
        msg += "\n  rank " + std::to_string(i) + " sends " + std::to_string(sends(i, j)) + " elements to rank " +
               std::to_string(j) + ", which expects " + std::to_string(recvs(j, i));
  if (!msg.empty())
    fail(prefix("all_to_all"),
         ": the split sizes do not match (rank i's input_split_sizes[j] must equal rank j's "
         "output_split_sizes[i]):",
         msg);
}

WorkHandle GlooProcessGroup::barrier() {
  return enqueue("barrier", [this](uint32_t tag) {
    Header h;
    h.v = {Header::kBarrier, 0, 0, 0};
    check_consistent("barrier", h, tag);
    gloo::BarrierOptions opts(context_);
    opts.setTag(tag + 1);
    opts.setTimeout(options_.timeout);
    gloo::barrier(opts);
  });
}

WorkHandle GlooProcessGroup::send(const Tensor& tensor, int dst, int tag) {
  std::string what = prefix("send");
  check_cpu_tensor(what, tensor, "");
  ANVIL_CHECK(dst >= 0 && dst < size() && dst != rank(), what, ": destination ", dst, " must be another rank in [0, ",
              size(), ")");
  ANVIL_CHECK(tag >= 0 && tag < (1 << 24), what, ": tag ", tag, " must be in [0, 2^24)");
  {
    std::lock_guard<std::mutex> lock(mu_);
    ANVIL_CHECK(broken_.empty(), what, ": the group is broken by an earlier error: ", broken_);
  }
  auto work = std::make_shared<P2PWork>(this, false, dst, tag, tensor);
  try {
    work->post();
  } catch (const gloo::Exception& e) {
    fail(what, ": Gloo: ", e.what());
  }
  return work;
}

WorkHandle GlooProcessGroup::recv(Tensor& tensor, int src, int tag) {
  std::string what = prefix("recv");
  check_cpu_tensor(what, tensor, "");
  ANVIL_CHECK(src >= 0 && src < size() && src != rank(), what, ": source ", src, " must be another rank in [0, ",
              size(), ")");
  ANVIL_CHECK(tag >= 0 && tag < (1 << 24), what, ": tag ", tag, " must be in [0, 2^24)");
  {
    std::lock_guard<std::mutex> lock(mu_);
    ANVIL_CHECK(broken_.empty(), what, ": the group is broken by an earlier error: ", broken_);
  }
  auto work = std::make_shared<P2PWork>(this, true, src, tag, tensor);
  try {
    work->post();
  } catch (const gloo::Exception& e) {
    fail(what, ": Gloo: ", e.what());
  }
  tensor.bump_version();
  return work;
}

}  // namespace anvil::distributed
