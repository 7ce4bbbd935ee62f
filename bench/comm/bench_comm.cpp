// bench_comm: collective bandwidth and DDP step time, run under anvil-run
// like nccl-tests (every rank runs this program; rank 0 prints).
//
//   build/bin/anvil-run --nproc-per-node 2 build/bin/bench_comm                 # all-reduce sweep
//   build/bin/anvil-run --nproc-per-node 2 build/bin/bench_comm --ddp           # DDP step times
//   build/bin/anvil-run --nproc-per-node 1 build/bin/bench_comm --ddp           # the one-rank baseline
//   build/bin/anvil-run --nproc-per-node 2 build/bin/bench_comm --comm-hooks    # DDP comm hooks side by side
//   build/bin/anvil-run --nproc-per-node 2 build/bin/bench_comm --gather-scatter # all-gather, reduce-scatter sweep
//   build/bin/anvil-run --nproc-per-node 2 build/bin/bench_comm --strategies    # DDP, ZeRO, FSDP, TP (strategies.cpp)
//   build/bin/anvil-run --nproc-per-node 3 --ps 1 build/bin/bench_comm --ps-strategy sync   # or async
//
// All-reduce: our ring (ring_all_reduce over send/recv) against the
// backend's all_reduce on float32 tensors from --min-bytes to --max-bytes.
// Times are the slowest rank's mean over --iters calls (best of --rounds
// alternating rounds). nccl-tests' definitions:
//   algbw = bytes / time,   busbw = algbw * 2 (n - 1) / n
// busbw is what each rank's link carries, comparable across rank counts.
// --gather-scatter: the backend's all_gather and reduce_scatter, bytes = the
// whole buffer (all-gather's output, reduce-scatter's input), as nccl-tests:
//   busbw = algbw * (n - 1) / n
//
// DDP: an MLP trained with SGD, --rank-batch examples per rank per step.
// Reported per step (slowest rank): the model alone (no communication, all
// ranks computing at once), DDP overlapping bucket all-reduces with backward,
// and DDP reducing every bucket after backward. With one rank the first is
// the "one rank on 1/N of the work" baseline.
//
// Comm hooks: the same DDP step with each hook (none = the default
// all-reduce, fp16, bf16, PowerSGD at ranks --powersgd-ranks, compressing
// from the first step): step time and the bytes each rank handed to the
// collectives per step (DDP's comm_stats), in alternating rounds so every
// hook sees the same machine load; the best round is reported.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <anvil/anvil.h>

#include "bench_mlp.h"
#include "distributed/comm_hooks/compress_hooks.h"
#include "distributed/comm_hooks/powersgd.h"
#include "distributed/ddp/ddp.h"
#include "distributed/process_group/ring_all_reduce.h"
#include "strategies.h"

using namespace anvil;
using namespace anvil::distributed;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The slowest rank's value: what a collective's time is.
double max_over_ranks(ProcessGroup& group, double v) {
  Tensor t = full({1}, v, TensorOptions().dtype(kFloat64));
  group.all_reduce(t, ReduceOp::Max)->wait();
  return t.item<double>();
}

// Mean seconds per call of fn over iters calls, after warmup calls, slowest rank.
double time_calls(ProcessGroup& group, int warmup, int iters, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  group.barrier()->wait();
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) fn();
  return max_over_ranks(group, seconds_since(t0) / iters);
}

std::string human_bytes(int64_t b) {
  char buf[32];
  if (b >= (1 << 20))
    std::snprintf(buf, sizeof buf, "%lldM", static_cast<long long>(b >> 20));
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%lldK", static_cast<long long>(b >> 10));
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(b));
  return buf;
}

struct SweepOptions {
  int64_t min_bytes = 4096, max_bytes = 64 << 20;
  int factor = 4, iters = 20, warmup = 3, rounds = 3;
  int64_t chunk_bytes = RingAllReduceOptions{}.chunk_bytes;
};

void all_reduce_sweep(ProcessGroup& group, const SweepOptions& o) {
  const int n = group.size();
  const double bus_factor = 2.0 * (n - 1) / n;
  const bool lead = group.rank() == 0;
  if (lead) {
    std::printf("# all_reduce float32 sum, %d ranks (%s), ring chunk %s\n", n, group.backend_name().c_str(),
                human_bytes(o.chunk_bytes).c_str());
    std::printf("%10s %10s | %12s %9s %9s | %12s %9s %9s | %9s %s\n", "bytes", "count", "backend_us", "algbw", "busbw",
                "ring_us", "algbw", "busbw", "ring/back", "check");
  }
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const int64_t count = bytes / 4;
    Tensor x = randn({count});
    // Correctness first: the ring must equal the backend on the same input.
    Tensor a = x.clone(), b = x.clone();
    group.all_reduce(a)->wait();
    ring_all_reduce(group, b, ReduceOp::Sum, {.chunk_bytes = o.chunk_bytes});
    double err = (a - b).abs().max().item<double>() / std::max(1e-30, a.abs().max().item<double>());
    const bool ok = max_over_ranks(group, err) < 1e-5;
    // Repeated reductions grow the values; that does not change the time.
    RingAllReducer ring_reducer(group, {.chunk_bytes = o.chunk_bytes});
    double backend = 1e30, ring = 1e30;
    for (int r = 0; r < o.rounds; ++r) {
      backend = std::min(backend, time_calls(group, o.warmup, o.iters, [&] { group.all_reduce(a)->wait(); }));
      ring = std::min(ring, time_calls(group, o.warmup, o.iters, [&] { ring_reducer.all_reduce(b); }));
    }
    if (lead) {
      const double gb = static_cast<double>(bytes) / 1e9;
      std::printf("%10s %10lld | %12.1f %9.3f %9.3f | %12.1f %9.3f %9.3f | %9.3f %s\n", human_bytes(bytes).c_str(),
                  static_cast<long long>(count), backend * 1e6, gb / backend, gb / backend * bus_factor, ring * 1e6,
                  gb / ring, gb / ring * bus_factor, ring / backend, ok ? "ok" : "MISMATCH");
      std::fflush(stdout);
    }
  }
}

// The backend's all_gather and reduce_scatter (there is no ring of our own
// for these; the ring all-reduce above is a reduce-scatter then an all-gather).
void gather_scatter_sweep(ProcessGroup& group, const SweepOptions& o) {
  const int n = group.size();
  const double bus_factor = (n - 1.0) / n;
  const bool lead = group.rank() == 0;
  if (lead) {
    std::printf("# all_gather and reduce_scatter float32 (sum), %d ranks (%s); bytes = the whole buffer\n", n,
                group.backend_name().c_str());
    std::printf("%10s %10s | %12s %9s %9s | %12s %9s %9s | %s\n", "bytes", "count", "allgather_us", "algbw", "busbw",
                "redscat_us", "algbw", "busbw", "check");
  }
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const int64_t shard = std::max<int64_t>(1, bytes / 4 / n), count = shard * n;
    Tensor mine = full({shard}, static_cast<double>(group.rank() + 1));
    Tensor gathered = empty({count});
    group.all_gather(gathered, mine)->wait();
    Tensor reduced = empty({shard});
    group.reduce_scatter(reduced, gathered)->wait();
    // Chunk r of gathered holds r + 1 on every rank, so rank r's reduced chunk holds n (r + 1).
    const double want = n * (group.rank() + 1.0), want_sum = shard * n * (n + 1) / 2.0;
    const double err = std::abs(reduced.max().item<double>() - want) + std::abs(reduced.min().item<double>() - want) +
                       std::abs(gathered.sum().item<double>() - want_sum) / want_sum;
    const bool ok = max_over_ranks(group, err) < 1e-5;
    double ag = 1e30, rs = 1e30;
    for (int r = 0; r < o.rounds; ++r) {
      ag = std::min(ag, time_calls(group, o.warmup, o.iters, [&] { group.all_gather(gathered, mine)->wait(); }));
      rs = std::min(rs, time_calls(group, o.warmup, o.iters, [&] { group.reduce_scatter(reduced, gathered)->wait(); }));
    }
    if (lead) {
      const double gb = static_cast<double>(count * 4) / 1e9;
      std::printf("%10s %10lld | %12.1f %9.3f %9.3f | %12.1f %9.3f %9.3f | %s\n", human_bytes(count * 4).c_str(),
                  static_cast<long long>(count), ag * 1e6, gb / ag, gb / ag * bus_factor, rs * 1e6, gb / rs,
                  gb / rs * bus_factor, ok ? "ok" : "MISMATCH");
      std::fflush(stdout);
    }
  }
}

struct DDPBenchOptions {
  int64_t rank_batch = 64, hidden = 1024, layers = 3, steps = 20, warmup = 3;
  double bucket_mb = 4;
  int rounds = 3;  // comm hooks: alternating rounds
  std::vector<int64_t> powersgd_ranks = {1, 4};
};

std::shared_ptr<nn::Module> make_model(const DDPBenchOptions& o) { return bench::make_bench_mlp(o.layers, o.hidden); }

void ddp_bench(std::shared_ptr<ProcessGroup> group, const DDPBenchOptions& o) {
  const int n = group->size();
  const bool lead = group->rank() == 0;
  manual_seed(1234 + group->rank());
  Tensor x = randn({o.rank_batch, 784});
  Tensor y = randint(0, 10, {o.rank_batch}, TensorOptions().dtype(kInt64));

  auto step_time = [&](nn::Module& model) {
    nn::optim::SGD opt(model.parameters(), {.lr = 1e-3});
    return time_calls(*group, static_cast<int>(o.warmup), static_cast<int>(o.steps), [&] {
      opt.zero_grad();
      cross_entropy(model.forward(x), y).backward();
      opt.step();
    });
  };
  auto model = make_model(o);
  int64_t params = 0;
  for (const Tensor& p : model->parameters()) params += p.numel();
  const double local = step_time(*model);
  const int64_t cap = static_cast<int64_t>(o.bucket_mb * (1 << 20));
  DistributedDataParallel overlap(model, group, {.bucket_cap_bytes = cap, .overlap_communication = true});
  const double with_overlap = step_time(overlap);
  DistributedDataParallel after(make_model(o), group, {.bucket_cap_bytes = cap, .overlap_communication = false});
  const double without_overlap = step_time(after);
  if (lead) {
    std::printf(
        "# DDP step: MLP 784-%lldx%lld-10 (%lld params, %.1f MB fp32), SGD, %lld examples per rank, %d "
        "ranks, %zu buckets of <= %.1f MB\n",
        static_cast<long long>(o.hidden), static_cast<long long>(o.layers), static_cast<long long>(params),
        params * 4 / 1e6, static_cast<long long>(o.rank_batch), n, overlap.bucket_parameter_names().size(),
        o.bucket_mb);
    std::printf("%-28s %10s\n", "variant", "step_ms");
    std::printf("%-28s %10.2f\n", "model alone (no comm)", local * 1e3);
    std::printf("%-28s %10.2f\n", "DDP, overlapped buckets", with_overlap * 1e3);
    std::printf("%-28s %10.2f\n", "DDP, reduce after backward", without_overlap * 1e3);
    std::printf(
        "{\"bench\": \"ddp_step\", \"ranks\": %d, \"rank_batch\": %lld, \"local_ms\": %.3f, "
        "\"ddp_overlap_ms\": %.3f, \"ddp_no_overlap_ms\": %.3f}\n",
        n, static_cast<long long>(o.rank_batch), local * 1e3, with_overlap * 1e3, without_overlap * 1e3);
  }
}

struct HookVariant {
  std::string name;
  std::function<void(DistributedDataParallel&)> install;
};

std::vector<HookVariant> hook_variants(const DDPBenchOptions& o) {
  std::vector<HookVariant> v{{"none (all-reduce)", [](DistributedDataParallel&) {}},
                             {"fp16", [](DistributedDataParallel& d) { d.register_comm_hook(fp16_compress_hook); }},
                             {"bf16", [](DistributedDataParallel& d) { d.register_comm_hook(bf16_compress_hook); }}};
  for (int64_t r : o.powersgd_ranks)
    v.push_back({"powerSGD r=" + std::to_string(r), [r](DistributedDataParallel& d) {
                   d.register_comm_hook(std::make_shared<PowerSGDState>(
                                            PowerSGDOptions{.matrix_approximation_rank = r, .start_powerSGD_iter = 0}),
                                        powersgd_hook);
                 }});
  return v;
}

void comm_hooks_bench(std::shared_ptr<ProcessGroup> group, const DDPBenchOptions& o) {
  const bool lead = group->rank() == 0;
  manual_seed(1234 + group->rank());
  Tensor x = randn({o.rank_batch, 784});
  Tensor y = randint(0, 10, {o.rank_batch}, TensorOptions().dtype(kInt64));
  const int64_t cap = static_cast<int64_t>(o.bucket_mb * (1 << 20));
  std::vector<HookVariant> variants = hook_variants(o);
  std::vector<std::shared_ptr<DistributedDataParallel>> ddps;
  std::vector<std::unique_ptr<nn::optim::SGD>> opts;
  for (const HookVariant& v : variants) {
    ddps.push_back(
        std::make_shared<DistributedDataParallel>(make_model(o), group, DDPOptions{.bucket_cap_bytes = cap}));
    v.install(*ddps.back());
    opts.push_back(std::make_unique<nn::optim::SGD>(ddps.back()->parameters(), nn::optim::SGDOptions{.lr = 1e-3}));
  }
  std::vector<double> best(variants.size(), 1e30);
  for (int round = 0; round < o.rounds; ++round)
    for (size_t i = 0; i < variants.size(); ++i)
      best[i] = std::min(best[i], time_calls(*group, static_cast<int>(o.warmup), static_cast<int>(o.steps), [&] {
                           opts[i]->zero_grad();
                           cross_entropy(ddps[i]->forward(x), y).backward();
                           opts[i]->step();
                         }));
  int64_t params = 0;
  for (const Tensor& p : ddps[0]->parameters()) params += p.numel();
  if (!lead) return;
  std::printf(
      "# DDP comm hooks: MLP 784-%lldx%lld-10 (%lld params), SGD, %lld examples per rank, %d ranks (%s), "
      "%zu buckets of <= %.1f MB (first <= 1 MiB); best of %d rounds of %lld steps\n",
      static_cast<long long>(o.hidden), static_cast<long long>(o.layers), static_cast<long long>(params),
      static_cast<long long>(o.rank_batch), group->size(), group->backend_name().c_str(),
      ddps[0]->bucket_parameter_names().size(), o.bucket_mb, o.rounds, static_cast<long long>(o.steps));
  std::printf("%-20s %14s %12s %10s %10s\n", "hook", "bytes/step", "vs none", "step_ms", "vs none");
  const double none_bytes = static_cast<double>(ddps[0]->comm_stats().last_step_bytes);
  for (size_t i = 0; i < variants.size(); ++i) {
    const int64_t bytes = ddps[i]->comm_stats().last_step_bytes;
    std::printf("%-20s %14lld %11.3fx %10.2f %9.2fx\n", variants[i].name.c_str(), static_cast<long long>(bytes),
                bytes / none_bytes, best[i] * 1e3, best[i] / best[0]);
  }
  for (size_t i = 0; i < variants.size(); ++i)
    std::printf(
        "{\"bench\": \"ddp_comm_hook\", \"hook\": \"%s\", \"ranks\": %d, \"bytes_per_step\": %lld, "
        "\"step_ms\": %.3f}\n",
        variants[i].name.c_str(), group->size(), static_cast<long long>(ddps[i]->comm_stats().last_step_bytes),
        best[i] * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"anvil collective and DDP benchmarks (run under anvil-run)"};
  SweepOptions sweep;
  DDPBenchOptions ddp;
  bench::StrategyBenchOptions strat;
  bool run_ddp = false, run_hooks = false, run_gather_scatter = false, run_strategies = false;
  std::string ps_mode;
  app.add_option("--min-bytes", sweep.min_bytes);
  app.add_option("--max-bytes", sweep.max_bytes);
  app.add_option("--factor", sweep.factor, "size multiplier between rows");
  app.add_option("--iters", sweep.iters);
  app.add_option("--warmup", sweep.warmup);
  app.add_option("--rounds", sweep.rounds, "alternating rounds; the best is reported");
  app.add_option("--chunk-bytes", sweep.chunk_bytes, "ring pipeline chunk");
  app.add_flag("--ddp", run_ddp, "benchmark DDP steps instead of the all-reduce sweep");
  app.add_option("--rank-batch", ddp.rank_batch, "DDP: examples per rank per step");
  app.add_option("--hidden", ddp.hidden);
  app.add_option("--layers", ddp.layers);
  app.add_option("--steps", ddp.steps);
  app.add_option("--bucket-mb", ddp.bucket_mb);
  app.add_flag("--comm-hooks", run_hooks, "benchmark DDP steps with each comm hook (bytes and time per step)");
  app.add_option("--hook-rounds", ddp.rounds, "comm hooks: alternating rounds; the best is reported");
  app.add_option("--powersgd-ranks", ddp.powersgd_ranks, "comm hooks: PowerSGD approximation ranks to run");
  app.add_flag("--gather-scatter", run_gather_scatter, "sweep the backend's all_gather and reduce_scatter");
  app.add_flag("--strategies", run_strategies, "DDP, ZeRO-1/2, FSDP and tensor parallel step time, bytes, memory");
  app.add_option("--ps-strategy", ps_mode, "under anvil-run --ps S: parameter-server training, sync or async")
      ->check(CLI::IsMember({"sync", "async"}));
  app.add_option("--strategy-steps", strat.steps, "strategies: timed steps per round");
  app.add_option("--strategy-rounds", strat.rounds, "strategies: alternating rounds");
  CLI11_PARSE(app, argc, argv);
  strat.rank_batch = ddp.rank_batch;
  strat.hidden = ddp.hidden;
  strat.layers = ddp.layers;
  strat.bucket_mb = ddp.bucket_mb;
  try {
    ANVIL_CHECK(std::getenv("WORLD_SIZE") != nullptr,
                "bench_comm: run it under the launcher, e.g. anvil-run --nproc-per-node 2 bench_comm");
    if (!ps_mode.empty()) return bench::ps_strategy_bench(strat, ps_mode == "sync");
    init_process_group();
    auto group = default_group_ptr();
    if (run_strategies)
      bench::strategies_bench(group, strat);
    else if (run_gather_scatter)
      gather_scatter_sweep(*group, sweep);
    else if (run_hooks)
      comm_hooks_bench(group, ddp);
    else if (run_ddp)
      ddp_bench(group, ddp);
    else
      all_reduce_sweep(*group, sweep);
    destroy_process_group();
    return 0;
  } catch (const Error& e) {
    std::cerr << "bench_comm: " << e.what() << "\n";
    return 1;
  }
}
