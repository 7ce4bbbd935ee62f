// Host overhead per op: one-element tensors, so the time is all validation,
// output allocation, dispatch and autograd bookkeeping, none of it arithmetic.
// time_per_op is in seconds ("1.5u" = 1.5 us).
#include "bench/cpu/bench_util.h"

namespace anvil::bench {
namespace {

void single_threaded_overhead(benchmark::internal::Benchmark* b) {
  b->MinTime(kMinSeconds)->Unit(benchmark::kMicrosecond);
}

// Inputs that do not require grad: no history is recorded.
void BM_overhead_add_no_grad(benchmark::State& state) {
  seed_inputs();
  const Tensor a = randn({1});
  const Tensor b = randn({1});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  set_seconds_per_op(state, 1);
}
BENCHMARK(BM_overhead_add_no_grad)->Apply(single_threaded_overhead);

// An input that requires grad: each add also builds (and, when its output
// dies, frees) a graph node.
void BM_overhead_add_recording(benchmark::State& state) {
  seed_inputs();
  Tensor a = randn({1});
  a.requires_grad_();
  const Tensor b = randn({1});
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  set_seconds_per_op(state, 1);
}
BENCHMARK(BM_overhead_add_recording)->Apply(single_threaded_overhead);

// The same inputs under NoGradGuard: what switching recording off costs.
void BM_overhead_add_no_grad_guard(benchmark::State& state) {
  seed_inputs();
  Tensor a = randn({1});
  a.requires_grad_();
  const Tensor b = randn({1});
  NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(add(a, b));
  set_seconds_per_op(state, 1);
}
BENCHMARK(BM_overhead_add_no_grad_guard)->Apply(single_threaded_overhead);

// A chain of 10 recorded ops of mixed kinds (unary, binary, with a scalar),
// like a small model's forward.
constexpr int kChainOps = 10;
Tensor chain_of_ten(const Tensor& x, const Tensor& w) {
  Tensor y = mul(x, w);  // 1
  y = add(y, 1.0);  // 2
  y = tanh(y);  // 3
  y = mul(y, x);  // 4
  y = sigmoid(y);  // 5
  y = sub(y, w);  // 6
  y = exp(y);  // 7
  y = mul(y, 0.5);  // 8
  y = add(y, x);  // 9
  return sum(y);  // 10
}

void BM_overhead_chain10_forward(benchmark::State& state) {
  seed_inputs();
  Tensor x = randn({1});
  Tensor w = randn({1});
  x.requires_grad_();
  w.requires_grad_();
  for (auto _ : state) benchmark::DoNotOptimize(chain_of_ten(x, w));
  set_seconds_per_op(state, kChainOps);
}
BENCHMARK(BM_overhead_chain10_forward)->Apply(single_threaded_overhead);

// Forward and backward; time_per_op spreads both over the 10 ops, so the
// backward's share is this minus BM_overhead_chain10_forward's.
void BM_overhead_chain10_forward_backward(benchmark::State& state) {
  seed_inputs();
  Tensor x = randn({1});
  Tensor w = randn({1});
  x.requires_grad_();
  w.requires_grad_();
  for (auto _ : state) {
    chain_of_ten(x, w).backward();
    benchmark::DoNotOptimize(x.grad());
    x.set_grad({});
    w.set_grad({});
  }
  set_seconds_per_op(state, kChainOps);
}
BENCHMARK(BM_overhead_chain10_forward_backward)->Apply(single_threaded_overhead);

}  // namespace
}  // namespace anvil::bench
