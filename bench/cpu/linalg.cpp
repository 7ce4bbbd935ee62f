// Matrix products: compute-bound, reported in FLOP/s (2*M*N*K per product).
#include "bench/cpu/bench_util.h"

namespace anvil::bench {
namespace {

double matmul_flops(int64_t m, int64_t n, int64_t k) { return 2.0 * static_cast<double>(m) * n * k; }

void BM_matmul_square(benchmark::State& state) {
  seed_inputs();
  const int64_t n = state.range(0);
  const Tensor a = randn({n, n});
  const Tensor b = randn({n, n});
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  set_flops_per_iteration(state, matmul_flops(n, n, n));
}
BENCHMARK(BM_matmul_square)->Apply(threaded_kernel)->ArgName("n")->RangeMultiplier(2)->Range(256, 4096);

// Many small products, as in attention heads: [32, 128, 64] x [32, 64, 128].
void BM_matmul_batched(benchmark::State& state) {
  seed_inputs();
  const int64_t batch = 32, m = 128, k = 64, n = 128;
  const Tensor a = randn({batch, m, k});
  const Tensor b = randn({batch, k, n});
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b));
  set_flops_per_iteration(state, batch * matmul_flops(m, n, k));
}
BENCHMARK(BM_matmul_batched)->Apply(threaded_kernel);

// linear(x [batch, in], W [out, in], b [out]): the GEMM plus one add per output.
void BM_linear_with_bias(benchmark::State& state) {
  seed_inputs();
  const int64_t batch = state.range(0), in = state.range(1), out = state.range(2);
  const Tensor x = randn({batch, in});
  const Tensor weight = randn({out, in});
  const Tensor bias = randn({out});
  for (auto _ : state) benchmark::DoNotOptimize(linear(x, weight, bias));
  set_flops_per_iteration(state, matmul_flops(batch, out, in) + static_cast<double>(batch) * out);
}
BENCHMARK(BM_linear_with_bias)
    ->Apply(threaded_kernel)
    ->ArgNames({"batch", "in", "out"})
    ->Args({64, 3136, 128})  // Fashion-MNIST CNN head: 64 x 7 x 7 features -> 128
    ->Args({1024, 1024, 1024})
    ->Args({3200, 384, 1536})  // MiniLM's intermediate dense: 64 sentences x 50 tokens
    ->Args({3200, 1536, 384});  // and its output dense

// A linear layer's training step: the forward GEMM and both backward GEMMs
// (grad_x = grad_y @ W, grad_W = grad_y^T @ x), at the samples' shapes.
void BM_linear_forward_backward(benchmark::State& state) {
  seed_inputs();
  const int64_t batch = state.range(0), in = state.range(1), out = state.range(2);
  Tensor x = randn({batch, in});
  Tensor weight = randn({out, in});
  x.requires_grad_();
  weight.requires_grad_();
  const Tensor grad_out = randn({batch, out});
  for (auto _ : state) {
    linear(x, weight).backward(grad_out);
    benchmark::DoNotOptimize(weight.grad());
    weight.set_grad({});
    x.set_grad({});
  }
  set_flops_per_iteration(state, 3 * matmul_flops(batch, out, in));
}
BENCHMARK(BM_linear_forward_backward)
    ->Apply(threaded_kernel)
    ->ArgNames({"batch", "in", "out"})
    ->Args({64, 784, 256})  // Fashion-MNIST MLP, first layer
    ->Args({64, 3136, 128})  // Fashion-MNIST CNN head
    ->Args({2048, 128, 512})  // char_gpt MLP: 32 x 64 tokens, 128 -> 512
    ->Args({2048, 512, 128});

}  // namespace
}  // namespace anvil::bench
