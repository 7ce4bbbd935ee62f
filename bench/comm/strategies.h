#pragma once
// bench_comm --strategies and --ps-strategy: one MLP trained with each
// distributed strategy (see strategies.cpp).
#include <cstdint>
#include <memory>

#include "distributed/process_group/process_group.h"

namespace anvil::bench {

struct StrategyBenchOptions {
  int64_t rank_batch = 64;  // examples per data-parallel rank per step
  int64_t hidden = 1024;
  int64_t layers = 3;  // hidden layers; odd, so tensor parallel pairs column and row layers
  int64_t steps = 10;  // timed steps per strategy per round
  int64_t warmup = 2;
  int rounds = 2;
  double bucket_mb = 4;
};

// DDP, ZeRO-1/2, FSDP (with and without prefetch) and tensor parallel over
// every rank of group, alternating in rounds; rank 0 prints the table.
void strategies_bench(const std::shared_ptr<distributed::ProcessGroup>& group, const StrategyBenchOptions& o);

// Parameter-server training under anvil-run --ps S (no process group):
// sync or async; every rank prints its own lines. Returns the exit status.
int ps_strategy_bench(const StrategyBenchOptions& o, bool sync);

}  // namespace anvil::bench
