// GPU timing support and the copy-bandwidth baseline (bench_cuda_util.h).
#include "bench/cuda/bench_cuda_util.h"

#include <algorithm>

#include "kernels/runtime.h"
#include "kernels/cuda/runtime/cuda_runtime.h"

namespace anvil::bench::cuda {

cudaStream_t anvil_stream() {
  auto& backend = static_cast<anvil::cuda::CudaRuntime&>(runtime_for(DeviceType::CUDA));
  return backend.stream(0);
}

namespace {

// Best of `reps` timed runs of op, in seconds, after one warm-up.
template <class Op> double best_seconds(Op&& op, cudaStream_t stream, int reps) {
  op();
  ANVIL_CUDA_CHECK(cudaStreamSynchronize(stream));
  cudaEvent_t start, stop;
  ANVIL_CUDA_CHECK(cudaEventCreate(&start));
  ANVIL_CUDA_CHECK(cudaEventCreate(&stop));
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    ANVIL_CUDA_CHECK(cudaEventRecord(start, stream));
    op();
    ANVIL_CUDA_CHECK(cudaEventRecord(stop, stream));
    ANVIL_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    ANVIL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    best = std::min(best, static_cast<double>(ms) * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

double measure_copy_bandwidth() {
  constexpr size_t kBytes = size_t{256} << 20;  // far past the 50 MB L2 of an H100
  cudaStream_t stream = anvil_stream();
  void *src = nullptr, *dst = nullptr;
  ANVIL_CUDA_CHECK(cudaMalloc(&src, kBytes));
  ANVIL_CUDA_CHECK(cudaMalloc(&dst, kBytes));
  ANVIL_CUDA_CHECK(cudaMemsetAsync(src, 1, kBytes, stream));
  const double memcpy_s = best_seconds(
      [&] { ANVIL_CUDA_CHECK(cudaMemcpyAsync(dst, src, kBytes, cudaMemcpyDeviceToDevice, stream)); }, stream, 20);
  const double kernel_s = best_seconds([&] { launch_copy_kernel(dst, src, kBytes, stream); }, stream, 20);
  ANVIL_CUDA_CHECK(cudaFree(src));
  ANVIL_CUDA_CHECK(cudaFree(dst));
  return 2.0 * kBytes / std::min(memcpy_s, kernel_s) / 1e9;  // read + write
}

}  // namespace

double copy_bandwidth_gbps() {
  static const double gbps = measure_copy_bandwidth();
  return gbps;
}

void report_bandwidth(benchmark::State& state, double bytes_per_op, const GpuTiming& t) {
  if (t.seconds <= 0) return;
  const double gbps = bytes_per_op * static_cast<double>(t.ops) / t.seconds / 1e9;
  state.counters["GB/s"] = gbps;
  state.counters["pct_copy_bw"] = 100.0 * gbps / copy_bandwidth_gbps();
}

void report_tflops(benchmark::State& state, double flops_per_op, const GpuTiming& t, double cublas_tflops) {
  if (t.seconds <= 0) return;
  const double tflops = flops_per_op * static_cast<double>(t.ops) / t.seconds / 1e12;
  state.counters["TFLOP/s"] = tflops;
  if (cublas_tflops > 0) state.counters["pct_cublas"] = 100.0 * tflops / cublas_tflops;
}

benchmark::internal::Benchmark* register_gpu(const std::string& name, std::function<void(benchmark::State&)> fn) {
  return benchmark::RegisterBenchmark(name.c_str(), std::move(fn))
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(0.2);
}

}  // namespace anvil::bench::cuda
