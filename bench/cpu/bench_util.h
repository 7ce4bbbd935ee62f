#pragma once
// Shared pieces of the CPU benchmarks: random inputs, throughput counters and
// the size sweeps, so every op family reports the same way.
//
// Throughput is decimal (1 GB/s = 1e9 bytes/s, 1 GFLOP/s = 1e9 FLOP/s) so the
// numbers compare directly with PyTorch and hardware datasheets. That is why
// bytes go through our own counter rather than State::SetBytesProcessed, which
// prints in powers of 1024.
#include <benchmark/benchmark.h>

#include <anvil/anvil.h>

#include <cstdint>

namespace anvil::bench {

inline constexpr int64_t kFloatBytes = 4;

// Memory-bound sweep: small enough to sit in L2, a few MB, and far past any
// last-level cache (16M floats = 64 MB per tensor).
inline constexpr int64_t kSmallElems = int64_t{1} << 16;  // 64K
inline constexpr int64_t kMediumElems = int64_t{1} << 20;  // 1M
inline constexpr int64_t kLargeElems = int64_t{1} << 24;  // 16M

// Row width of the row-wise ops (softmax, layer_norm, sum over the last dim):
// a transformer-ish hidden size.
inline constexpr int64_t kRowWidth = 1024;

// Each benchmark runs at least this long; short enough that the whole suite
// stays around a minute on two cores, long enough for stable medians.
inline constexpr double kMinSeconds = 0.2;

// Every benchmark seeds before drawing its inputs, so a run of the binary
// sees the same numbers whichever benchmarks a filter selects.
inline void seed_inputs() { manual_seed(20261121); }

// Bytes the op must move per iteration (reads + writes of its tensors).
inline void set_bytes_per_iteration(benchmark::State& state, double bytes) {
  state.counters["bytes_per_second"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
}

// Floating-point operations per iteration (a multiply-add counts as two).
inline void set_flops_per_iteration(benchmark::State& state, double flops) {
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

// Wall time per op, for the host-overhead benchmarks where one iteration runs
// several ops. Printed in seconds with an SI prefix: "1.2u" is 1.2 us.
inline void set_seconds_per_op(benchmark::State& state, double ops_per_iteration) {
  state.counters["time_per_op"] = benchmark::Counter(
      ops_per_iteration, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Registration for kernels that may run on OpenMP threads: wall time is the
// headline; the CPU column is the whole process's CPU time (all threads),
// which on a shared machine shows the work itself where other tenants' load
// makes the wall time noisy.
// Each first runs untimed for kWarmUpSeconds (at least one call), as the
// PyTorch side calls each op once before timing: an op's first call takes
// its output's memory from the system. Fresh huge pages on the development VM
// took 0.4 GB/s to touch the first time (the host backs them then), so one
// 64 MB forward and backward took 220 ms instead of 8, and was the only
// iteration Google Benchmark timed (2026-11-28-huge-pages.md).
inline constexpr double kWarmUpSeconds = 0.05;
inline void threaded_kernel(benchmark::internal::Benchmark* b) {
  b->UseRealTime()
      ->MeasureProcessCPUTime()
      ->MinTime(kMinSeconds)
      ->MinWarmUpTime(kWarmUpSeconds)
      ->Unit(benchmark::kMicrosecond);
}

// The memory-bound size sweep, element counts as the benchmark's argument.
inline void memory_bound_sizes(benchmark::internal::Benchmark* b) {
  threaded_kernel(b);
  b->ArgName("elems")->Arg(kSmallElems)->Arg(kMediumElems)->Arg(kLargeElems);
}

}  // namespace anvil::bench
