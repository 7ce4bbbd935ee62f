// Reductions and softmax: memory-bound, reported in bytes moved per second.
// Row-wise ops use [elems / 1024, 1024], so the sweep keeps the row width and
// grows the number of rows.
#include "bench/cpu/bench_util.h"

namespace anvil::bench {
namespace {

Shape rows_of_row_width(int64_t elems) { return {elems / kRowWidth, kRowWidth}; }

void BM_sum_all(benchmark::State& state) {
  seed_inputs();
  const Tensor x = randn({state.range(0)});
  for (auto _ : state) benchmark::DoNotOptimize(sum(x));
  set_bytes_per_iteration(state, static_cast<double>(x.numel()) * kFloatBytes);
}
BENCHMARK(BM_sum_all)->Apply(memory_bound_sizes);

void BM_sum_last_dim(benchmark::State& state) {
  seed_inputs();
  const Tensor x = randn(rows_of_row_width(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(sum(x, {-1}));
  set_bytes_per_iteration(state, static_cast<double>(x.numel() + x.size(0)) * kFloatBytes);
}
BENCHMARK(BM_sum_last_dim)->Apply(memory_bound_sizes);

// Counted as one read and one write of x: the minimum a softmax must move,
// whatever number of passes the kernel makes over a row.
void BM_softmax_last_dim(benchmark::State& state) {
  seed_inputs();
  const Tensor x = randn(rows_of_row_width(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(softmax(x, -1));
  set_bytes_per_iteration(state, 2.0 * x.numel() * kFloatBytes);
}
BENCHMARK(BM_softmax_last_dim)->Apply(memory_bound_sizes);

}  // namespace
}  // namespace anvil::bench
