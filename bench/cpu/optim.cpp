// Optimizer steps: one step of each optimizer over parameter tensors whose
// sizes are those of the Fashion-MNIST MLP sample (235k floats in six
// tensors). Memory-bound: AdamW reads p, g, m, v and writes p, m, v. The
// PyTorch side is bench/pytorch/cpu_optim.py (the same names and bytes).
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

// The optimizers written with tensor ops (nn/optim/param_update.h): a few ops
// per parameter and state tensor, each its own pass, where AdamW and SGD make
// one fused pass per batch of parameters. Bytes are the least the update must
// move (`tensors` floats an element: each of p, g and the state read, p and
// the state written), so GB/s here reads directly against AdamW's above.
template <class Optim, class Options>
void tensor_op_step(benchmark::State& state, const Options& options, double tensors) {
  std::vector<Tensor> params = mlp_sized_parameters();
  Optim opt(params, options);
  for (auto _ : state) opt.step();
  set_bytes_per_iteration(state, tensors * elements(params) * kFloatBytes);
}

void BM_adadelta_step(benchmark::State& state) {  // p, g, square_avg, acc_delta; p and both written
  tensor_op_step<nn::optim::Adadelta>(state, nn::optim::AdadeltaOptions(1.0), 7);
}
BENCHMARK(BM_adadelta_step)->Apply(threaded_kernel);

void BM_rmsprop_step(benchmark::State& state) {  // p, g, square_avg; p and square_avg written
  tensor_op_step<nn::optim::RMSprop>(state, nn::optim::RMSpropOptions(1e-2), 5);
}
BENCHMARK(BM_rmsprop_step)->Apply(threaded_kernel);

void BM_adagrad_step(benchmark::State& state) {  // p, g, sum; p and sum written
  tensor_op_step<nn::optim::Adagrad>(state, nn::optim::AdagradOptions(1e-2), 5);
}
BENCHMARK(BM_adagrad_step)->Apply(threaded_kernel);

}  // namespace
}  // namespace anvil::bench
