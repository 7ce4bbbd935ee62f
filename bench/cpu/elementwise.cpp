// Elementwise ops are memory-bound: they report bytes moved per second, to be
// read against the copy baselines at the top of this file (what the memory
// system gives a plain copy on this machine).
#include <cstring>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <vector>

#include "bench/cpu/bench_util.h"

namespace anvil::bench {
namespace {

// The rooflines for every memory-bound op, without anvil: std::memcpy on one
// thread, and split across all OpenMP threads (what anvil's kernels can use).
void memcpy_in_chunks(float* dst, const float* src, int64_t n, int chunks) {
#pragma omp parallel for num_threads(chunks) schedule(static)
  for (int c = 0; c < chunks; ++c) {
    const int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin) * sizeof(float));
  }
}
int all_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// The timed loop of every copy baseline: pair i copied on the i-th iteration
// (mod the number of pairs), split into `chunks` pieces, one per thread.
void time_copies(benchmark::State& state, const std::vector<float*>& dst, const std::vector<const float*>& src,
                 int64_t n, int chunks) {
  size_t next = 0;
  for (auto _ : state) {
    memcpy_in_chunks(dst[next], src[next], n, chunks);
    benchmark::DoNotOptimize(dst[next]);
    benchmark::ClobberMemory();
    next = (next + 1) % src.size();
  }
  set_bytes_per_iteration(state, 2.0 * n * kFloatBytes);
}

template <int (*Threads)()> void BM_memcpy_baseline(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> src(static_cast<size_t>(n), 1.0f), dst(static_cast<size_t>(n));
  time_copies(state, {dst.data()}, {src.data()}, n, Threads());
}
int one_thread() { return 1; }
BENCHMARK_TEMPLATE(BM_memcpy_baseline, one_thread)->Name("BM_memcpy_1_thread")->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_memcpy_baseline, all_threads)->Name("BM_memcpy_all_threads")->Apply(memory_bound_sizes);

// The same copy rotating over `buffers` source/destination pairs, a working
// set of buffers x 128 MB at 16M floats. Where the last-level cache holds one
// pair, the baseline above copies from that cache: on the development VM
// (480 MiB L3 reported) it ran 40-45 GB/s against 26-27 with two or more
// pairs (2026-11-27-pipelined-row-backwards.md). The forward+backward
// benchmarks of memory_bound_16m.cpp touch four 64 MB tensors, the working
// set of buffers:2; read them against both.
void BM_memcpy_rotating(benchmark::State& state) {
  const int64_t n = state.range(0), buffers = state.range(1);
  std::vector<std::vector<float>> src(static_cast<size_t>(buffers), std::vector<float>(static_cast<size_t>(n), 1.0f));
  std::vector<std::vector<float>> dst(static_cast<size_t>(buffers), std::vector<float>(static_cast<size_t>(n)));
  std::vector<float*> to;
  std::vector<const float*> from;
  for (int64_t b = 0; b < buffers; ++b) {
    to.push_back(dst[static_cast<size_t>(b)].data());
    from.push_back(src[static_cast<size_t>(b)].data());
  }
  time_copies(state, to, from, n, all_threads());
}
BENCHMARK(BM_memcpy_rotating)
    ->Name("BM_memcpy_all_threads_rotating")
    ->Apply(threaded_kernel)
    ->ArgNames({"elems", "buffers"})
    ->Args({kLargeElems, 2})
    ->Args({kLargeElems, 4});

// The same copy between anvil CPU tensors' buffers, rotating over `buffers`
// pairs as above (1: one pair). std::vector's memory sits on 4 KiB pages;
// anvil's allocator puts blocks of 2 MiB or more on transparent huge pages
// (core/base/cpu_allocator.cpp). This is the ceiling for the memory anvil's
// kernels actually stream through; read them against both.
void BM_memcpy_tensors(benchmark::State& state) {
  const int64_t n = state.range(0), buffers = state.range(1);
  std::vector<Tensor> tensors;  // all written once: no page faults timed
  std::vector<float*> to;
  std::vector<const float*> from;
  for (int64_t b = 0; b < buffers; ++b) {
    tensors.push_back(full({n}, 1.0f));
    from.push_back(tensors.back().data<float>());
    tensors.push_back(zeros({n}));
    to.push_back(tensors.back().data<float>());
  }
  time_copies(state, to, from, n, all_threads());
}
BENCHMARK(BM_memcpy_tensors)
    ->Name("BM_memcpy_all_threads_tensors")
    ->Apply(threaded_kernel)
    ->ArgNames({"elems", "buffers"})
    ->Args({kSmallElems, 1})
    ->Args({kMediumElems, 1})
    ->Args({kLargeElems, 1})
    ->Args({kLargeElems, 2});

// anvil's own copy: allocation + the backend's copy kernel.
void BM_clone(benchmark::State& state) {
  seed_inputs();
  const Tensor x = randn({state.range(0)});
  for (auto _ : state) benchmark::DoNotOptimize(x.clone());
  set_bytes_per_iteration(state, 2.0 * x.numel() * kFloatBytes);
}
BENCHMARK(BM_clone)->Apply(memory_bound_sizes);

// Two inputs read, one output written.
template <Tensor (*Op)(const Tensor&, const Tensor&)> void BM_binary(benchmark::State& state) {
  seed_inputs();
  const Tensor a = randn({state.range(0)});
  const Tensor b = randn({state.range(0)});
  for (auto _ : state) benchmark::DoNotOptimize(Op(a, b));
  set_bytes_per_iteration(state, 3.0 * a.numel() * kFloatBytes);
}
BENCHMARK_TEMPLATE(BM_binary, anvil::add)->Name("BM_add")->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_binary, anvil::mul)->Name("BM_mul")->Apply(memory_bound_sizes);

// In place: the same traffic as BM_add without allocating the output, so the
// gap between the two is what a fresh output buffer costs (for large tensors,
// page faults on memory the allocator just got from the OS).
void BM_add_inplace(benchmark::State& state) {
  seed_inputs();
  Tensor a = randn({state.range(0)});
  const Tensor b = randn({state.range(0)});
  for (auto _ : state) benchmark::DoNotOptimize(add_(a, b));
  set_bytes_per_iteration(state, 3.0 * a.numel() * kFloatBytes);
}
BENCHMARK(BM_add_inplace)->Apply(memory_bound_sizes);

// One input read, one output written.
template <Tensor (*Op)(const Tensor&)> void BM_unary(benchmark::State& state) {
  seed_inputs();
  const Tensor x = randn({state.range(0)});
  for (auto _ : state) benchmark::DoNotOptimize(Op(x));
  set_bytes_per_iteration(state, 2.0 * x.numel() * kFloatBytes);
}
// gelu has a defaulted second parameter, so it needs a one-argument wrapper.
Tensor gelu_erf(const Tensor& x) { return anvil::gelu(x, GeluApprox::None); }
Tensor gelu_tanh(const Tensor& x) { return anvil::gelu(x, GeluApprox::Tanh); }
BENCHMARK_TEMPLATE(BM_unary, anvil::exp)->Name("BM_exp")->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_unary, anvil::relu)->Name("BM_relu")->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_unary, gelu_erf)->Name("BM_gelu")->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_unary, gelu_tanh)->Name("BM_gelu_tanh")->Apply(memory_bound_sizes);

// Casts between float32 and the 16-bit floats (the mixed-precision and
// compressed-gradient paths): 4 bytes on one side and 2 on the other per element.
template <DType From, DType To> void BM_cast(benchmark::State& state) {
  seed_inputs();
  const Tensor x = cast(randn({state.range(0)}), From);
  for (auto _ : state) benchmark::DoNotOptimize(cast(x, To));
  set_bytes_per_iteration(state, static_cast<double>(x.numel()) * (kFloatBytes + 2));
}
// The same into an output allocated once (copy_): the conversion alone,
// without the page faults of a fresh 16M-element buffer.
template <DType From, DType To> void BM_cast_into(benchmark::State& state) {
  seed_inputs();
  const Tensor x = cast(randn({state.range(0)}), From);
  Tensor y = cast(x, To);
  for (auto _ : state) benchmark::DoNotOptimize(y.copy_(x));
  set_bytes_per_iteration(state, static_cast<double>(x.numel()) * (kFloatBytes + 2));
}
BENCHMARK_TEMPLATE(BM_cast, kFloat32, kBFloat16)->Name("BM_cast_float32_to_bfloat16")->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_cast, kBFloat16, kFloat32)->Name("BM_cast_bfloat16_to_float32")->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_cast, kFloat32, kFloat16)->Name("BM_cast_float32_to_float16")->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_cast, kFloat16, kFloat32)->Name("BM_cast_float16_to_float32")->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_cast_into, kFloat32, kBFloat16)
    ->Name("BM_cast_into_float32_to_bfloat16")
    ->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_cast_into, kBFloat16, kFloat32)
    ->Name("BM_cast_into_bfloat16_to_float32")
    ->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_cast_into, kFloat32, kFloat16)
    ->Name("BM_cast_into_float32_to_float16")
    ->Apply(memory_bound_sizes);
BENCHMARK_TEMPLATE(BM_cast_into, kFloat16, kFloat32)
    ->Name("BM_cast_into_float16_to_float32")
    ->Apply(memory_bound_sizes);

}  // namespace
}  // namespace anvil::bench
