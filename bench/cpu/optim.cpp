// Optimizer steps: one AdamW / SGD-with-momentum step over parameter tensors
// whose sizes are those of the Fashion-MNIST MLP sample (235k floats in six
// tensors). Memory-bound: AdamW reads p, g, m, v and writes p, m, v.
#include "bench/cpu/bench_util.h"

namespace anvil::bench {
namespace {

std::vector<Tensor> mlp_sized_parameters() {
  seed_inputs();
  std::vector<Tensor> params;
  for (const Shape& s : {Shape{256, 784}, Shape{256}, Shape{128, 256}, Shape{128}, Shape{10, 128}, Shape{10}}) {
    Tensor p = randn(s);
    p.requires_grad_();
    p.set_grad(randn(s));
    params.push_back(p);
  }
  return params;
}

double elements(const std::vector<Tensor>& params) {
  double n = 0;
  for (const Tensor& p : params) n += static_cast<double>(p.numel());
  return n;
}

void BM_adamw_step(benchmark::State& state) {
  std::vector<Tensor> params = mlp_sized_parameters();
  nn::optim::AdamW opt(params, {.lr = 1e-3, .weight_decay = 1e-4});
  for (auto _ : state) opt.step();
  set_bytes_per_iteration(state, 7 * elements(params) * kFloatBytes);
}
BENCHMARK(BM_adamw_step)->Apply(threaded_kernel);

void BM_sgd_momentum_step(benchmark::State& state) {
  std::vector<Tensor> params = mlp_sized_parameters();
  nn::optim::SGD opt(params, {.lr = 1e-2, .momentum = 0.9});
  for (auto _ : state) opt.step();
  set_bytes_per_iteration(state, 5 * elements(params) * kFloatBytes);
}
BENCHMARK(BM_sgd_momentum_step)->Apply(threaded_kernel);

}  // namespace
}  // namespace anvil::bench
