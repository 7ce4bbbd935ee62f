// Memory-bound kernels through the anvil Tensor API (what users get: op
// validation, output allocation from the caching allocator, dispatch, the
// kernel). Each reports GB/s of the bytes the op must move (every input read
// once, every output written once) and that as a percentage of the measured
// device copy bandwidth.
//
// Names: mem/<op>/<dtype>/n=<elements> — bench/pytorch/kernels.py prints the
// same names for the same shapes.
#include <anvil/anvil.h>

#include <string>

#include "bench/cuda/bench_cuda_util.h"
#include "nn/optim/adam.h"

namespace anvil::bench::cuda {
namespace {

constexpr int kReps = 20;
// 4 MB, 64 MB and 256 MB per float32 tensor: the first fits in an H100's
// 50 MB L2, the others do not.
constexpr int64_t kSizes[] = {int64_t{1} << 20, int64_t{1} << 24, int64_t{1} << 26};
constexpr int64_t kRowWidth = 1024;  // softmax / layer_norm rows (a hidden size)
constexpr int64_t kVocab = 32768;  // cross_entropy classes

const Device kGpu = Device::cuda(0);

Tensor gpu_randn(const Shape& shape, DType dtype = kFloat32) {
  return randn(shape).to(kGpu, dtype);  // drawn on the CPU: independent of the CUDA random kernels
}

std::string name(const std::string& op, int64_t n, const char* dtype = "f32") {
  return "mem/" + op + "/" + dtype + "/n=" + std::to_string(n);
}

void copy_benchmarks(int64_t n) {
  register_gpu(name("copy_d2d", n), [n](benchmark::State& state) {
    void *src = nullptr, *dst = nullptr;
    const size_t bytes = static_cast<size_t>(n) * 4;
    ANVIL_CUDA_CHECK(cudaMalloc(&src, bytes));
    ANVIL_CUDA_CHECK(cudaMalloc(&dst, bytes));
    cudaStream_t s = anvil_stream();
    const GpuTiming t = time_on_gpu(
        state, [&] { ANVIL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s)); }, kReps);
    report_bandwidth(state, 2.0 * bytes, t);
    cudaFree(src);
    cudaFree(dst);
  });
  register_gpu(name("copy_kernel", n), [n](benchmark::State& state) {
    void *src = nullptr, *dst = nullptr;
    const size_t bytes = static_cast<size_t>(n) * 4;
    ANVIL_CUDA_CHECK(cudaMalloc(&src, bytes));
    ANVIL_CUDA_CHECK(cudaMalloc(&dst, bytes));
    cudaStream_t s = anvil_stream();
    const GpuTiming t = time_on_gpu(
        state, [&] { launch_copy_kernel(dst, src, bytes, s); }, kReps);
    report_bandwidth(state, 2.0 * bytes, t);
    cudaFree(src);
    cudaFree(dst);
  });
  register_gpu(name("clone", n), [n](benchmark::State& state) {  // anvil's own copy kernel via Tensor
    const Tensor x = gpu_randn({n});
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(x.clone()); }, kReps);
    report_bandwidth(state, 2.0 * n * 4, t);
  });
}

void elementwise_benchmarks(int64_t n) {
  register_gpu(name("add", n), [n](benchmark::State& state) {
    const Tensor a = gpu_randn({n}), b = gpu_randn({n});
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(add(a, b)); }, kReps);
    report_bandwidth(state, 3.0 * n * 4, t);
  });
  register_gpu(name("mul", n), [n](benchmark::State& state) {
    const Tensor a = gpu_randn({n}), b = gpu_randn({n});
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(mul(a, b)); }, kReps);
    report_bandwidth(state, 3.0 * n * 4, t);
  });
  register_gpu(name("gelu", n), [n](benchmark::State& state) {
    const Tensor a = gpu_randn({n});
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(gelu(a)); }, kReps);
    report_bandwidth(state, 2.0 * n * 4, t);
  });
  register_gpu(name("cast_to_bf16", n), [n](benchmark::State& state) {
    const Tensor a = gpu_randn({n});
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(a.to(kBFloat16)); }, kReps);
    report_bandwidth(state, n * (4.0 + 2.0), t);
  });
  register_gpu(name("add", n, "bf16"), [n](benchmark::State& state) {
    const Tensor a = gpu_randn({n}, kBFloat16), b = gpu_randn({n}, kBFloat16);
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(add(a, b)); }, kReps);
    report_bandwidth(state, 3.0 * n * 2, t);
  });
}

void row_benchmarks(int64_t n) {
  register_gpu(name("softmax", n), [n](benchmark::State& state) {
    const Tensor x = gpu_randn({n / kRowWidth, kRowWidth});
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(softmax(x, -1)); }, kReps);
    report_bandwidth(state, 2.0 * n * 4, t);
  });
  register_gpu(name("layer_norm", n), [n](benchmark::State& state) {
    const Tensor x = gpu_randn({n / kRowWidth, kRowWidth});
    const Tensor w = gpu_randn({kRowWidth}), b = gpu_randn({kRowWidth});
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(layer_norm(x, {kRowWidth}, w, b)); }, kReps);
    report_bandwidth(state, 2.0 * n * 4, t);  // x in, y out (weights and row stats are negligible)
  });
  register_gpu(name("cross_entropy", n), [n](benchmark::State& state) {
    const int64_t rows = n / kVocab;
    const Tensor logits = gpu_randn({rows, kVocab});
    const Tensor targets = randint(0, kVocab, {rows}).to(kGpu);
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(cross_entropy(logits, targets)); }, kReps);
    report_bandwidth(state, 1.0 * n * 4, t);  // the logits, read once at best
  });
}

void optimizer_benchmarks(int64_t n) {
  register_gpu(name("adamw", n), [n](benchmark::State& state) {
    Tensor p = gpu_randn({n});
    p.requires_grad_();
    p.set_grad(gpu_randn({n}));
    nn::optim::AdamW opt({p}, nn::optim::AdamWOptions{.lr = 1e-3, .weight_decay = 1e-2});
    const GpuTiming t = time_on_gpu(
        state, [&] { opt.step(); }, kReps);
    // Reads param, grad, exp_avg, exp_avg_sq; writes param, exp_avg, exp_avg_sq.
    report_bandwidth(state, 7.0 * n * 4, t);
  });
}

}  // namespace

void register_memory_benchmarks() {
  for (int64_t n : kSizes) copy_benchmarks(n);
  for (int64_t n : kSizes) elementwise_benchmarks(n);
  for (int64_t n : kSizes) row_benchmarks(n);
  for (int64_t n : kSizes) optimizer_benchmarks(n);
}

}  // namespace anvil::bench::cuda
