#pragma once
// Shared pieces of build/bin/bench_kernels: GPU timing with CUDA events
// (manual time), the measured device copy bandwidth every memory-bound
// benchmark is compared with, and the counters they report.
//
// Timing: each benchmark iteration records an event, queues the op `reps`
// times on the stream anvil ops use, records a second event and waits for
// it; the iteration's time is the whole batch's elapsed time, and the
// counters (GB/s, TFLOP/s) divide by reps. So the rates are device time per
// op, including any gaps the host leaves between launches (for tiny ops that
// is the host overhead, which is what users get), and Google Benchmark's
// "Time" column is per batch of `reps` ops. Per batch, not per op: min_time
// then bounds the wall time too. With per-op iteration times a 5 us op ran
// 0.2 s / 5 us = 40k iterations of 20 launches and a sync each, 8 s of wall
// time per benchmark (seen on an H100, where the whole suite could not
// finish in its 110 s).
//
// Throughput is decimal (1 GB/s = 1e9 B/s, 1 TFLOP/s = 1e12 FLOP/s), like
// datasheets and the PyTorch script.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"

namespace anvil::bench::cuda {

// The stream anvil queues ops on for cuda:0 (the backend's current stream).
cudaStream_t anvil_stream();

// Device-to-device copy bandwidth in GB/s (bytes read + bytes written per
// second), the best of cudaMemcpyAsync and a plain float4 copy kernel on
// 256 MB. Measured once, on first use, before any benchmark that reports a
// percentage of it.
double copy_bandwidth_gbps();

// bench/cuda/copy_kernel.cu: dst[i] = src[i], 16 bytes per thread per step.
void launch_copy_kernel(void* dst, const void* src, size_t bytes, cudaStream_t stream);

struct GpuTiming {
  double seconds = 0;  // device time of every batch
  int64_t ops = 0;  // ops in those batches (iterations * reps)
};

template <class Op> GpuTiming time_on_gpu(benchmark::State& state, Op&& op, int reps) {
  cudaStream_t stream = anvil_stream();
  op();  // warm-up: lazy initialisation, allocator growth, cuBLAS heuristics
  ANVIL_CUDA_CHECK(cudaStreamSynchronize(stream));
  cudaEvent_t start, stop;
  ANVIL_CUDA_CHECK(cudaEventCreate(&start));
  ANVIL_CUDA_CHECK(cudaEventCreate(&stop));
  GpuTiming t;
  for (auto _ : state) {
    ANVIL_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int r = 0; r < reps; ++r) op();
    ANVIL_CUDA_CHECK(cudaEventRecord(stop, stream));
    ANVIL_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    ANVIL_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    const double seconds = static_cast<double>(ms) * 1e-3;
    state.SetIterationTime(seconds);
    t.seconds += seconds;
    t.ops += reps;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return t;
}

// GB/s and pct_copy_bw (percent of copy_bandwidth_gbps()).
void report_bandwidth(benchmark::State& state, double bytes_per_op, const GpuTiming& t);
// TFLOP/s, and pct_cublas when a cuBLAS rate for the same problem is given.
void report_tflops(benchmark::State& state, double flops_per_op, const GpuTiming& t, double cublas_tflops = 0);

// Registration helpers: every GPU benchmark uses manual time in microseconds.
benchmark::internal::Benchmark* register_gpu(const std::string& name, std::function<void(benchmark::State&)> fn);

void register_memory_benchmarks();
void register_gemm_benchmarks();
void register_attention_benchmarks();
void register_host_benchmarks();

}  // namespace anvil::bench::cuda
