// Neural-network ops. Normalisation and losses are memory-bound (bytes per
// second); convolutions are compute-bound (FLOP/s); pooling reports both.
// Convolution and pooling shapes are those of the Fashion-MNIST CNN sample at
// batch 64: conv 1->32 at 28x28, pool, conv 32->64 at 14x14, pool.
#include "bench/cpu/bench_util.h"

namespace anvil::bench {
namespace {

// --- layer_norm over the last dim of [elems / 1024, 1024], with weight and bias ---

void BM_layer_norm(benchmark::State& state) {
  seed_inputs();
  const Tensor x = randn({state.range(0) / kRowWidth, kRowWidth});
  const Tensor weight = randn({kRowWidth});
  const Tensor bias = randn({kRowWidth});
  for (auto _ : state) benchmark::DoNotOptimize(layer_norm(x, {kRowWidth}, weight, bias));
  set_bytes_per_iteration(state, (2.0 * x.numel() + 2.0 * kRowWidth) * kFloatBytes);
}
BENCHMARK(BM_layer_norm)->Apply(memory_bound_sizes);

// --- cross_entropy over logits [4096, 1000] (ImageNet-sized classes) ---

constexpr int64_t kLossRows = 4096, kLossClasses = 1000;

void BM_cross_entropy(benchmark::State& state) {
  seed_inputs();
  const Tensor logits = randn({kLossRows, kLossClasses});
  const Tensor targets = randint(0, kLossClasses, {kLossRows});
  for (auto _ : state) benchmark::DoNotOptimize(cross_entropy(logits, targets));
  set_bytes_per_iteration(state, static_cast<double>(logits.numel()) * kFloatBytes + kLossRows * 8.0);
}
BENCHMARK(BM_cross_entropy)->Apply(threaded_kernel);

// Forward and the gradient w.r.t. the logits, as in a training step. Counted
// as the least a fused kernel moves: logits read once, their gradient written once.
void BM_cross_entropy_forward_backward(benchmark::State& state) {
  seed_inputs();
  Tensor logits = randn({kLossRows, kLossClasses});
  logits.requires_grad_();
  const Tensor targets = randint(0, kLossClasses, {kLossRows});
  for (auto _ : state) {
    cross_entropy(logits, targets).backward();
    benchmark::DoNotOptimize(logits.grad());
    logits.set_grad({});  // so that no iteration pays for accumulating into the last one's gradient
  }
  set_bytes_per_iteration(state, 2.0 * logits.numel() * kFloatBytes + kLossRows * 8.0);
}
BENCHMARK(BM_cross_entropy_forward_backward)->Apply(threaded_kernel);

// --- conv2d, 3x3, stride 1, padding 1 ---

struct ConvShape {
  int64_t batch, in_channels, out_channels, size;  // size: height = width
};
ConvShape conv_shape(const benchmark::State& state) {
  return {state.range(0), state.range(1), state.range(2), state.range(3)};
}
// 2 FLOPs per multiply-add; the bias add is left out, as is customary.
double conv_forward_flops(const ConvShape& s) {
  return 2.0 * static_cast<double>(s.batch) * s.out_channels * s.size * s.size * s.in_channels * 9;
}
Conv2dOptions same_padding_3x3() {
  Conv2dOptions o;
  o.padding = {1, 1};
  return o;
}
void conv_shapes(benchmark::internal::Benchmark* b) {
  threaded_kernel(b);
  // The Fashion-MNIST CNN's two layers, a CIFAR-sized first layer, a deeper 8x8 layer.
  b->ArgNames({"N", "Cin", "Cout", "HW"})
      ->Args({64, 1, 32, 28})
      ->Args({64, 32, 64, 14})
      ->Args({64, 3, 32, 32})
      ->Args({32, 128, 128, 8});
}

void BM_conv2d_forward(benchmark::State& state) {
  seed_inputs();
  const ConvShape s = conv_shape(state);
  const Tensor x = randn({s.batch, s.in_channels, s.size, s.size});
  const Tensor weight = randn({s.out_channels, s.in_channels, 3, 3});
  const Tensor bias = randn({s.out_channels});
  const Conv2dOptions options = same_padding_3x3();
  for (auto _ : state) benchmark::DoNotOptimize(conv2d(x, weight, bias, options));
  set_flops_per_iteration(state, conv_forward_flops(s));
}
BENCHMARK(BM_conv2d_forward)->Apply(conv_shapes);

// Forward, then the gradients a training step needs: weight and bias always,
// the input only past the first layer (a network never needs the gradient of
// its images). Each gradient is another product of the forward's size.
void BM_conv2d_forward_backward(benchmark::State& state) {
  seed_inputs();
  const ConvShape s = conv_shape(state);
  const bool first_layer = s.in_channels <= 3;
  Tensor x = randn({s.batch, s.in_channels, s.size, s.size});
  if (!first_layer) x.requires_grad_();
  Tensor weight = randn({s.out_channels, s.in_channels, 3, 3});
  Tensor bias = randn({s.out_channels});
  weight.requires_grad_();
  bias.requires_grad_();
  const Tensor grad_out = randn({s.batch, s.out_channels, s.size, s.size});
  const Conv2dOptions options = same_padding_3x3();
  for (auto _ : state) {
    conv2d(x, weight, bias, options).backward(grad_out);
    benchmark::DoNotOptimize(weight.grad());
    // So that no iteration pays for accumulating into the last one's gradients.
    weight.set_grad({});
    bias.set_grad({});
    if (!first_layer) x.set_grad({});
  }
  const int products = first_layer ? 2 : 3;  // forward, grad weight, [grad input]
  set_flops_per_iteration(state, products * conv_forward_flops(s));
}
BENCHMARK(BM_conv2d_forward_backward)->Apply(conv_shapes);

// --- max_pool2d, 2x2, stride 2, on the conv outputs above ---

void BM_max_pool2d(benchmark::State& state) {
  seed_inputs();
  const int64_t batch = state.range(0), channels = state.range(1), size = state.range(2);
  const Tensor x = randn({batch, channels, size, size});
  Pool2dOptions options;
  options.kernel = {2, 2};
  for (auto _ : state) benchmark::DoNotOptimize(max_pool2d(x, options));
  const double out_elems = static_cast<double>(x.numel()) / 4;
  set_bytes_per_iteration(state, (static_cast<double>(x.numel()) + out_elems) * kFloatBytes);
  set_flops_per_iteration(state, out_elems * 4);  // one comparison per window element
}
BENCHMARK(BM_max_pool2d)->Apply(threaded_kernel)->ArgNames({"N", "C", "HW"})->Args({64, 32, 28})->Args({64, 64, 14});

// Forward and backward, as a training step runs them.
void BM_max_pool2d_forward_backward(benchmark::State& state) {
  seed_inputs();
  const int64_t batch = state.range(0), channels = state.range(1), size = state.range(2);
  Tensor x = randn({batch, channels, size, size});
  x.requires_grad_();
  const Tensor grad_out = randn({batch, channels, size / 2, size / 2});
  Pool2dOptions options;
  options.kernel = {2, 2};
  for (auto _ : state) {
    max_pool2d(x, options).backward(grad_out);
    benchmark::DoNotOptimize(x.grad());
    x.set_grad({});
  }
  // Forward reads x, writes out; backward reads x, out and grad_out, writes grad_in.
  const double out_elems = static_cast<double>(x.numel()) / 4;
  set_bytes_per_iteration(state, (3 * static_cast<double>(x.numel()) + 3 * out_elems) * kFloatBytes);
}
BENCHMARK(BM_max_pool2d_forward_backward)
    ->Apply(threaded_kernel)
    ->ArgNames({"N", "C", "HW"})
    ->Args({64, 32, 28})
    ->Args({64, 64, 14});

}  // namespace
}  // namespace anvil::bench
