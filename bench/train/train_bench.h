#pragma once
// Shared pieces of the training benchmarks (build/bin/bench_train): how long
// a run is and how throughput is reported, so every model reports the same way.
//
// One benchmark iteration is a fixed number of optimizer steps (forward,
// backward, AdamW step) over batches prepared before timing, so the numbers
// are the model's training speed without data loading. Steps run on the CPU
// with OpenMP on every core; run with OMP_WAIT_POLICY=PASSIVE as run.sh does
// (spinning OpenMP threads stall every op when anything else uses a core).
#include <benchmark/benchmark.h>

#include <anvil/anvil.h>

#include <cstdint>

namespace anvil::bench {

// Untimed steps before the first iteration: the first step allocates the
// optimizer's state and fills the allocator's caches.
inline constexpr int64_t kWarmupSteps = 3;

// Few, long iterations: a training step is milliseconds to a second here,
// so three iterations of tens of steps give stable numbers while the whole
// binary stays within a few minutes on two cores.
inline constexpr int64_t kIterations = 3;

// Wall time, since CPU time would add up every OpenMP thread's time.
inline void training_run(benchmark::internal::Benchmark* b) {
  b->UseRealTime()->Iterations(kIterations)->Unit(benchmark::kMillisecond);
}

// Examples (or tokens) trained per second of wall time.
inline void set_items_per_iteration(benchmark::State& state, const char* name, double items) {
  state.counters[name] = benchmark::Counter(items, benchmark::Counter::kIsIterationInvariantRate);
}

// Seconds one epoch of `steps_per_epoch` steps would take at the measured
// speed: the inverse of epochs per second.
inline void set_epoch_seconds(benchmark::State& state, int64_t steps_per_iteration, int64_t steps_per_epoch) {
  state.counters["epoch_seconds"] =
      benchmark::Counter(static_cast<double>(steps_per_iteration) / static_cast<double>(steps_per_epoch),
                         benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Wall time of one optimizer step, printed with an SI prefix ("45m" is 45 ms).
inline void set_step_seconds(benchmark::State& state, int64_t steps_per_iteration) {
  state.counters["step_time"] = benchmark::Counter(static_cast<double>(steps_per_iteration),
                                                   benchmark::Counter::kIsIterationInvariantRate |
                                                       benchmark::Counter::kInvert);
}

}  // namespace anvil::bench
