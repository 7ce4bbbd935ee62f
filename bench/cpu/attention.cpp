// Attention forward + backward on the CPU: the fused op
// (scaled_dot_product_attention, which never holds the [L, S] scores) next to
// the composed math path (matmul, causal mask, softmax, matmul, all kept for
// autograd), causal, batch 1, 4 heads of 64, L = S from 128 to 4096. Besides
// time and FLOP/s (the causal half counted, 4 products of 2*L*L/2*E each way:
// forward 2 of them, backward 5 for the fused kernel's recompute, reported as
// the usual 3.5x of the forward) each reports the peak bytes the CPU caching
// allocator held during one step ("peak_MB"), over what it held before.
#include <cmath>

#include "bench/cpu/bench_util.h"
#include "core/memory.h"

namespace anvil::bench {
namespace {

constexpr int64_t kHeads = 4, kHeadDim = 64;

Tensor composed_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  const int64_t len = q.size(-2);
  const TensorOptions index = TensorOptions().dtype(kInt64);
  Tensor future =
      gt(arange(static_cast<double>(len), index).unsqueeze(0), arange(static_cast<double>(len), index).unsqueeze(1));
  Tensor scores = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(kHeadDim)));
  scores = masked_fill(scores, future, -INFINITY);
  return matmul(softmax(scores, -1), v);
}

template <bool kFused> void BM_attention_forward_backward(benchmark::State& state) {
  seed_inputs();
  const int64_t len = state.range(0);
  Tensor q = randn({1, kHeads, len, kHeadDim}).requires_grad_(true);
  Tensor k = randn({1, kHeads, len, kHeadDim}).requires_grad_(true);
  Tensor v = randn({1, kHeads, len, kHeadDim}).requires_grad_(true);
  const Tensor g = randn({1, kHeads, len, kHeadDim});
  double peak = 0;
  for (auto _ : state) {
    const int64_t before = memory_stats().allocated_bytes;
    reset_peak_memory_stats();
    AttentionOptions o;
    o.is_causal = true;
    Tensor out = kFused ? scaled_dot_product_attention(q, k, v, o) : composed_attention(q, k, v);
    (out * g).sum().backward();
    benchmark::DoNotOptimize(q.grad());
    peak = static_cast<double>(memory_stats().peak_allocated_bytes - before);
    q.set_grad({});
    k.set_grad({});
    v.set_grad({});
  }
  state.counters["peak_MB"] = peak / 1e6;
  // 2 products forward, 5 backward (2.5x), causal half of each.
  set_flops_per_iteration(state, 7.0 * 2.0 * len * len * kHeadDim * kHeads / 2.0);
}

void lengths(benchmark::internal::Benchmark* b) {
  threaded_kernel(b);
  b->ArgName("L")->Arg(128)->Arg(512)->Arg(1024)->Arg(2048)->Arg(4096);
}

BENCHMARK(BM_attention_forward_backward<true>)->Name("BM_attention_fused")->Apply(lengths);
BENCHMARK(BM_attention_forward_backward<false>)->Name("BM_attention_composed")->Apply(lengths);

}  // namespace
}  // namespace anvil::bench
