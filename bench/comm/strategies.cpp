// bench_comm --strategies / --ps-strategy: the same MLP (784-HxL-10, float32,
// AdamW, cross-entropy) trained with each distributed strategy.
//
// --strategies, every rank in one group: DDP, ZeRO-1 and ZeRO-2
// (ZeroAdamW), FSDP full shard with and without prefetch, and tensor
// parallel over all ranks (column/row layer pairs). Data-parallel strategies
// see --rank-batch examples per rank; tensor parallel sees the global batch
// (ranks x rank-batch) on every rank, so every row trains on the same
// examples per step. The strategies alternate in --strategy-rounds rounds;
// each step is timed alone and the median of the slowest rank's step times
// is reported.
//
// Bytes per step: every strategy gets its own wrapper around the group that
// counts (a) the payload handed to collectives (CountingProcessGroup, as DDP's
// comm_stats) and (b) what a bandwidth-optimal ring sends per rank for those
// calls: all-reduce 2(n-1)/n B, all-gather (n-1) x the input, reduce-scatter
// (n-1)/n x the input, send B. (b) is what the README's formulas give. Gloo's
// own algorithms may send more (its reduce_scatter is an all-reduce).
//
// --ps-strategy sync|async under anvil-run --ps S: S parameter servers
// (AdamW on each) and the other ranks workers; each worker times pull +
// forward/backward + push, and reports ParameterServerClient::bytes_moved().
#include "strategies.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <anvil/anvil.h>

#include "bench_mlp.h"
#include "distributed/comm_hooks/counting_process_group.h"
#include "distributed/ddp/ddp.h"
#include "distributed/fsdp/fsdp.h"
#include "distributed/parameter_server/parameter_server.h"
#include "distributed/store/tcp_store.h"
#include "distributed/tensor_parallel/layers.h"
#include "distributed/zero/zero.h"

namespace anvil::bench {
namespace {

using namespace anvil::distributed;
using Clock = std::chrono::steady_clock;
using GroupPtr = std::shared_ptr<ProcessGroup>;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// CountingProcessGroup plus the bytes a ring would send per rank for each call.
class RingBytesGroup : public CountingProcessGroup {
 public:
  explicit RingBytesGroup(GroupPtr inner) : CountingProcessGroup(*inner), keep_(std::move(inner)) {}
  double ring_bytes() const { return ring_bytes_; }

  using CountingProcessGroup::all_gather;
  using CountingProcessGroup::all_reduce;
  using CountingProcessGroup::reduce_scatter;
  using CountingProcessGroup::send;

  WorkHandle all_reduce(Tensor& tensor, ReduceOp op) override {
    add(2.0 * (size() - 1) / size() * static_cast<double>(tensor.nbytes()));
    return CountingProcessGroup::all_reduce(tensor, op);
  }
  WorkHandle all_gather(Tensor& output, const Tensor& input) override {
    add((size() - 1) * static_cast<double>(input.nbytes()));
    return CountingProcessGroup::all_gather(output, input);
  }
  WorkHandle reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op) override {
    add((size() - 1.0) / size() * static_cast<double>(input.nbytes()));
    return CountingProcessGroup::reduce_scatter(output, input, op);
  }
  WorkHandle send(const Tensor& tensor, int dst, int tag) override {
    add(static_cast<double>(tensor.nbytes()));
    return CountingProcessGroup::send(tensor, dst, tag);
  }

 private:
  // Collectives may be issued from autograd's hooks on another thread.
  void add(double b) {
    std::lock_guard<std::mutex> lock(mu_);
    ring_bytes_ += b;
  }
  GroupPtr keep_;
  std::mutex mu_;
  double ring_bytes_ = 0;
};

std::shared_ptr<nn::Sequential> make_mlp(const StrategyBenchOptions& o) { return make_bench_mlp(o.layers, o.hidden); }

// The same MLP with Linear layers alternating column- and row-parallel: one
// all-reduce forward and one backward per pair.
std::shared_ptr<nn::Sequential> make_tp_mlp(const StrategyBenchOptions& o, const GroupPtr& tp) {
  namespace tpl = tensor_parallel;
  auto seq = std::make_shared<nn::Sequential>();
  int64_t in = 784;
  for (int64_t i = 0; i <= o.layers; ++i) {
    const int64_t out = i == o.layers ? 10 : o.hidden;
    nn::Linear full(in, out);  // the same on every rank (same seed)
    if (i % 2 == 0)
      seq->push_back(tpl::ColumnParallelLinear::from_full(full, tp));
    else
      seq->push_back(tpl::RowParallelLinear::from_full(full, tp, {.input_is_parallel = true}));
    if (i < o.layers) seq->push_back(std::make_shared<nn::ReLU>());
    in = out;
  }
  return seq;
}

int64_t tensor_bytes(const std::vector<Tensor>& ts) {
  int64_t b = 0;
  for (const Tensor& t : ts) b += t.defined() ? static_cast<int64_t>(t.nbytes()) : 0;
  return b;
}

struct Strategy {
  std::string name;
  std::shared_ptr<RingBytesGroup> counter;
  std::function<void()> step;
  std::function<int64_t()> state_bytes;  // model state this rank holds (see where each is set)
  std::string state_source;
  std::vector<double> times;
  int64_t payload_per_step = 0;
  double ring_per_step = 0;
};

struct Batch {
  Tensor x, y;
};

std::vector<Strategy> make_strategies(const GroupPtr& group, const StrategyBenchOptions& o, const Batch& local,
                                      const Batch& global) {
  const int64_t cap = static_cast<int64_t>(o.bucket_mb * (1 << 20));
  const nn::optim::AdamWOptions adamw{.lr = 1e-4};
  std::vector<Strategy> v;
  auto counted = [&] { return std::make_shared<RingBytesGroup>(group); };

  {
    auto c = counted();
    auto ddp = std::make_shared<DistributedDataParallel>(make_mlp(o), c, DDPOptions{.bucket_cap_bytes = cap});
    auto opt = std::make_shared<nn::optim::AdamW>(ddp->parameters(), adamw);
    v.push_back({"DDP", c,
                 [=] {
                   opt->zero_grad();
                   cross_entropy(ddp->forward(local.x), local.y).backward();
                   opt->step();
                 },
                 [=] { return 4 * tensor_bytes(ddp->parameters()); }, "16P: params+grads counted, moments 2x params"});
  }
  for (int stage : {1, 2}) {
    auto c = counted();
    auto model = make_mlp(o);
    auto opt = std::make_shared<ZeroAdamW>(model->parameters(), c, adamw,
                                           ZeroOptions{.stage = stage, .bucket_cap_bytes = cap});
    auto peak_grads = std::make_shared<int64_t>(0);
    v.push_back({"ZeRO-" + std::to_string(stage), c,
                 [=] {
                   opt->zero_grad();
                   cross_entropy(model->forward(local.x), local.y).backward();
                   *peak_grads = std::max(*peak_grads, opt->gradient_bytes());
                   opt->step();
                 },
                 [=] {
                   return tensor_bytes(model->parameters()) + *peak_grads + opt->optimizer_state_bytes() +
                          4 * opt->shard_size();
                 },
                 "params + gradient_bytes() after backward + optimizer_state_bytes() + fp32 slice"});
  }
  for (bool prefetch : {false, true}) {
    auto c = counted();
    auto fsdp = std::make_shared<FullyShardedDataParallel>(
        make_mlp(o), c, FSDPOptions{.forward_prefetch = prefetch, .backward_prefetch = prefetch});
    auto opt = std::make_shared<nn::optim::AdamW>(fsdp->parameters(), adamw);
    v.push_back({prefetch ? "FSDP (ZeRO-3), prefetch" : "FSDP (ZeRO-3), no prefetch", c,
                 [=] {
                   opt->zero_grad();
                   cross_entropy(fsdp->forward(local.x), local.y).backward();
                   opt->step();
                 },
                 [=] {
                   const FSDPMemoryStats m = fsdp->memory_stats();
                   return 3 * m.sharded_param_bytes + m.sharded_grad_bytes + m.peak_gathered_param_bytes +
                          m.peak_full_grad_bytes;
                 },
                 "memory_stats(): shards + shard grads + 2x shards (moments) + peak gathered + peak full grads"});
  }
  {
    auto c = counted();
    manual_seed(4321);  // every rank slices the same full layers
    auto model = make_tp_mlp(o, c);
    auto opt = std::make_shared<nn::optim::AdamW>(model->parameters(), adamw);
    v.push_back({"tensor parallel (t=" + std::to_string(group->size()) + ", global batch)", c,
                 [=] {
                   opt->zero_grad();
                   cross_entropy(model->forward(global.x), global.y).backward();
                   opt->step();
                 },
                 [=] { return 4 * tensor_bytes(model->parameters()); },
                 "16 x this rank's parameter elements (params+grads+moments)"});
  }
  return v;
}

}  // namespace

void strategies_bench(const GroupPtr& group, const StrategyBenchOptions& o) {
  ANVIL_CHECK(o.layers % 2 == 1, "--layers must be odd for the tensor-parallel pairs");
  const int n = group->size();
  const bool lead = group->rank() == 0;
  manual_seed(99);  // the global batch: the same on every rank
  Batch global{randn({n * o.rank_batch, 784}), randint(0, 10, {n * o.rank_batch}, TensorOptions().dtype(kInt64))};
  manual_seed(1234 + group->rank());
  Batch local{randn({o.rank_batch, 784}), randint(0, 10, {o.rank_batch}, TensorOptions().dtype(kInt64))};
  std::vector<Strategy> strategies = make_strategies(group, o, local, global);

  for (int round = 0; round < o.rounds; ++round)
    for (Strategy& s : strategies) {
      for (int64_t i = 0; i < o.warmup; ++i) s.step();
      group->barrier()->wait();
      const int64_t payload0 = s.counter->bytes();
      const double ring0 = s.counter->ring_bytes();
      for (int64_t i = 0; i < o.steps; ++i) {
        auto t0 = Clock::now();
        s.step();
        s.times.push_back(seconds_since(t0));
      }
      s.payload_per_step = (s.counter->bytes() - payload0) / o.steps;
      s.ring_per_step = (s.counter->ring_bytes() - ring0) / static_cast<double>(o.steps);
    }

  int64_t params = 0;
  for (const Tensor& p : make_mlp(o)->parameters()) params += p.numel();
  if (lead) {
    std::printf(
        "# strategies: MLP 784-%lldx%lld-10 (P = %lld params, %.2f MB fp32), AdamW, %lld examples per "
        "data-parallel rank, %d ranks (%s); %d rounds of %lld warm-up + %lld timed steps each; "
        "median of the slowest rank's step\n",
        static_cast<long long>(o.hidden), static_cast<long long>(o.layers), static_cast<long long>(params),
        params * 4 / 1e6, static_cast<long long>(o.rank_batch), n, group->backend_name().c_str(), o.rounds,
        static_cast<long long>(o.warmup), static_cast<long long>(o.steps));
    std::printf("%-40s %9s %9s %14s %14s %14s\n", "strategy", "median_ms", "min_ms", "payload B/step", "ring B/step",
                "state B/rank");
  }
  for (Strategy& s : strategies) {
    Tensor t = from_vector(s.times);
    group->all_reduce(t, ReduceOp::Max)->wait();
    std::vector<double> slowest = t.to_vector<double>();
    Tensor state = full({1}, static_cast<double>(s.state_bytes()), TensorOptions().dtype(kFloat64));
    group->all_reduce(state, ReduceOp::Max)->wait();
    if (!lead) continue;
    std::printf("%-40s %9.2f %9.2f %14lld %14.0f %14.0f\n", s.name.c_str(), median(slowest) * 1e3,
                *std::min_element(slowest.begin(), slowest.end()) * 1e3, static_cast<long long>(s.payload_per_step),
                s.ring_per_step, state.item<double>());
  }
  if (!lead) return;
  for (const Strategy& s : strategies) std::printf("#   state of %s: %s\n", s.name.c_str(), s.state_source.c_str());
  std::fflush(stdout);
}

namespace {

std::vector<int64_t> numels(const std::vector<Tensor>& params) {
  std::vector<int64_t> v;
  for (const Tensor& p : params) v.push_back(p.numel());
  return v;
}

int env_int(const char* name) {
  const char* v = std::getenv(name);
  ANVIL_CHECK(v != nullptr,
              std::string("bench_comm --ps-strategy: ") + name + " is not set (run under anvil-run --ps)");
  return std::atoi(v);
}

}  // namespace

int ps_strategy_bench(const StrategyBenchOptions& o, bool sync) {
  const ps::JobRole role = ps::job_role_from_environment();
  TCPStoreOptions so;
  so.host = std::getenv("MASTER_ADDR") ? std::getenv("MASTER_ADDR") : "127.0.0.1";
  so.port = env_int("MASTER_PORT");
  so.is_server = env_int("RANK") == 0;  // PS 0 serves the store: it lives as long as the job
  TCPStore store(so);
  manual_seed(7);
  auto model = make_mlp(o);
  const ps::ShardPlan plan = ps::make_shard_plan(numels(model->parameters()), role.num_ps);
  const int max_staleness = 4;
  if (role.is_ps) {
    ps::ServerOptions opts;
    opts.mode = sync ? ps::Mode::Sync : ps::Mode::Async;
    opts.num_workers = role.num_workers;
    opts.max_staleness = max_staleness;
    opts.make_optimizer = [](std::vector<Tensor> p) {
      return std::make_unique<nn::optim::AdamW>(std::move(p), nn::optim::AdamWOptions{.lr = 1e-4});
    };
    ps::ParameterServer server(model->parameters(), plan, role.index, opts);
    ps::publish_server(store, role.index, {so.host, server.port()});
    const auto t0 = Clock::now();
    server.wait_until_done(std::chrono::minutes(5));
    const double wall = seconds_since(t0);
    const ps::ServerStats st = server.stats();
    std::printf(
        "{\"bench\": \"ps_server\", \"mode\": \"%s\", \"ps\": %d, \"workers\": %d, \"updates\": %lld, "
        "\"pushes_applied\": %lld, \"stale_refused\": %lld, \"max_applied_staleness\": %lld, "
        "\"bytes_sent\": %llu, \"bytes_received\": %llu, \"wall_s\": %.3f}\n",
        sync ? "sync" : "async", role.index, role.num_workers, static_cast<long long>(st.version),
        static_cast<long long>(st.pushes_applied), static_cast<long long>(st.stale_refused),
        static_cast<long long>(st.max_applied_staleness), static_cast<unsigned long long>(st.bytes_sent),
        static_cast<unsigned long long>(st.bytes_received), wall);
    return 0;
  }
  manual_seed(1234 + role.index);
  Tensor x = randn({o.rank_batch, 784});
  Tensor y = randint(0, 10, {o.rank_batch}, TensorOptions().dtype(kInt64));
  ps::ParameterServerClient client(model->parameters(), plan,
                                   {.worker_id = role.index, .servers = ps::lookup_servers(store, role.num_ps)});
  int64_t refused = 0;
  auto step = [&] {
    client.pull();
    model->zero_grad();
    cross_entropy(model->forward(x), y).backward();
    refused += client.push().refused;
  };
  for (int64_t i = 0; i < o.warmup; ++i) step();
  const uint64_t bytes0 = client.bytes_moved();
  const int64_t steps = o.steps * o.rounds;
  std::vector<double> times;
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < steps; ++i) {
    auto ts = Clock::now();
    step();
    times.push_back(seconds_since(ts));
  }
  const double wall = seconds_since(t0);
  const double bytes_per_step = static_cast<double>(client.bytes_moved() - bytes0) / static_cast<double>(steps);
  client.finish();
  std::printf(
      "{\"bench\": \"ps_worker\", \"mode\": \"%s\", \"worker\": %d, \"workers\": %d, \"num_ps\": %d, "
      "\"steps\": %lld, \"median_step_ms\": %.2f, \"examples_per_s\": %.1f, \"bytes_moved_per_step\": %.0f, "
      "\"refused_pushes\": %lld, \"max_staleness\": %d}\n",
      sync ? "sync" : "async", role.index, role.num_workers, role.num_ps, static_cast<long long>(steps),
      median(times) * 1e3, static_cast<double>(o.rank_batch * steps) / wall, bytes_per_step,
      static_cast<long long>(refused), max_staleness);
  return 0;
}

}  // namespace anvil::bench
