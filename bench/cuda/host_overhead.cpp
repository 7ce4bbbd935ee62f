// Host-side costs, timed with the host clock:
//   alloc/cached/bytes=N   ns per allocate+deallocate pair served from the
//                          CUDA caching allocator's cache (steady state)
//   overhead/add_1elem     us per add of two 1-element CUDA tensors: many
//                          calls, then one synchronize, divided by the count
//                          (validation, allocation, dispatch, launch)
#include <anvil/anvil.h>

#include <chrono>

#include "bench/cuda/bench_cuda_util.h"
#include "kernels/runtime.h"

namespace anvil::bench::cuda {
namespace {

void register_allocator(size_t bytes) {
  benchmark::RegisterBenchmark(("alloc/cached/bytes=" + std::to_string(bytes)).c_str(),
                               [bytes](benchmark::State& state) {
                                 Allocator& alloc = runtime_for(DeviceType::CUDA).allocator(0);
                                 alloc.deallocate(alloc.allocate(bytes));  // the first one may cudaMalloc
                                 for (auto _ : state) {
                                   void* p = alloc.allocate(bytes);
                                   benchmark::DoNotOptimize(p);
                                   alloc.deallocate(p);
                                 }
                                 state.counters["ns_per_alloc_free"] = benchmark::Counter(
                                     1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
                               })
      ->Unit(benchmark::kNanosecond)
      ->UseRealTime()
      ->MinTime(0.2);
}

void register_launch_overhead() {
  constexpr int kCalls = 1000;
  benchmark::RegisterBenchmark(
      "overhead/add_1elem",
      [](benchmark::State& state) {
        const Tensor a = randn({1}).to(Device::cuda(0)), b = randn({1}).to(Device::cuda(0));
        Runtime& backend = runtime_for(DeviceType::CUDA);
        benchmark::DoNotOptimize(add(a, b));
        backend.synchronize(0);
        double seconds = 0;
        for (auto _ : state) {
          const auto start = std::chrono::steady_clock::now();
          for (int i = 0; i < kCalls; ++i) benchmark::DoNotOptimize(add(a, b));
          backend.synchronize(0);
          seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        }
        state.counters["us_per_op"] = seconds / (static_cast<double>(state.iterations()) * kCalls) * 1e6;
      })
      ->Unit(benchmark::kMicrosecond)
      ->UseRealTime()
      ->MinTime(0.2);
}

}  // namespace

void register_host_benchmarks() {
  for (size_t bytes : {size_t{512}, size_t{1} << 20, size_t{64} << 20}) register_allocator(bytes);
  register_launch_overhead();
}

}  // namespace anvil::bench::cuda
