// build/bin/bench_kernels: the CUDA kernels' benchmarks (see bench/README.md).
// Without a GPU it says so and exits 0, so scripts can run it anywhere.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "bench/cuda/bench_cuda_util.h"
#include "kernels/cuda_info.h"

int main(int argc, char** argv) {
  if (!anvil::cuda::is_available()) {
    std::printf("bench_kernels: no CUDA GPU is visible to this process; nothing to benchmark (exit 0).\n");
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const auto props = anvil::cuda::device_properties(0);
  benchmark::AddCustomContext("device", props.name);
  benchmark::AddCustomContext("compute_capability", std::to_string(props.major) + "." + std::to_string(props.minor));
  // Registration order is run order: the copy baseline first, then the ops
  // that report a percentage of it, then GEMMs, then host-side costs.
  // On stderr: stdout may be --benchmark_format=json.
  std::fprintf(stderr, "device copy bandwidth: %.1f GB/s (best of cudaMemcpy D2D and a copy kernel, 256 MB)\n",
               anvil::bench::cuda::copy_bandwidth_gbps());
  anvil::bench::cuda::register_memory_benchmarks();
  anvil::bench::cuda::register_gemm_benchmarks();
  anvil::bench::cuda::register_attention_benchmarks();
  anvil::bench::cuda::register_host_benchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
