// Fused attention (scaled_dot_product_attention, kernels/cuda/attention.cu)
// through the Tensor API, in TFLOP/s, beside PyTorch's SDPA (bench/pytorch/
// kernels.py prints the same names for the same shapes).
//
// FLOPs as FlashAttention's papers count them: the forward is two matrix
// products, 4·B·H·L·S·E (E = head dim, L = S = sequence length), halved when
// causal; the backward is 2.5x the forward (five products), so forward +
// backward is 3.5x. Only the useful work is counted: a kernel that computes
// masked scores and throws them away gets no credit for them.
//
// Names: attn/<fwd|fwdbwd>/<dtype>/b<B>h<H>s<S>d<E>[/causal][/no_tensor_cores|/cudnn|/flash]:
// the plain rows run what ANVIL_SDPA_BACKEND=auto picks (the faster of cuDNN
// and the flash kernels, timed on first use: kernels/cuda/attention_choice.h);
// /cudnn and /flash force one path (16-bit only; a /cudnn row whose problem
// cuDNN declines reports the reason as its error). 16-bit flash forwards run
// on tensor cores (attention_tensor_core.cu); the no_tensor_cores rows time
// the flash path with ANVIL_ATTENTION_TENSOR_CORES=0.
#include <anvil/anvil.h>

#include <cstdlib>
#include <string>

#include "bench/cuda/bench_cuda_util.h"
#include "kernels/cuda/attention_choice.h"

namespace anvil::bench::cuda {
namespace {

struct AttentionShape {
  int64_t batch, heads, seq, head_dim;
};
// A BERT-base-like layer at two lengths, and a long-context one at head dim 128.
constexpr AttentionShape kShapes[] = {{8, 12, 512, 64}, {4, 16, 2048, 64}, {2, 16, 4096, 128}};

double forward_flops(const AttentionShape& s, bool causal) {
  const double full = 4.0 * s.batch * s.heads * s.seq * s.seq * s.head_dim;
  return causal ? full / 2 : full;
}

std::string name(const char* pass, const char* dtype, const AttentionShape& s, bool causal) {
  return std::string("attn/") + pass + "/" + dtype + "/b" + std::to_string(s.batch) + "h" + std::to_string(s.heads) +
         "s" + std::to_string(s.seq) + "d" + std::to_string(s.head_dim) + (causal ? "/causal" : "");
}

// After a warm-up call: false (and the row marked as an error) when a
// forced cuDNN row would in fact time the flash kernels.
bool ran_forced_path(benchmark::State& state, const char* path, bool backward) {
  if (path == nullptr || std::string(path) != "cudnn") return true;
  const anvil::cuda::SdpaDecision d = anvil::cuda::last_sdpa_decision(backward);
  if (d.path == anvil::cuda::SdpaPath::Cudnn) return true;
  state.SkipWithError(("cuDNN did not run: " + d.why).c_str());
  return false;
}

// The 16-bit rows with one path forced: /cudnn beside /flash (and PyTorch's SDPA).
void register_forced(const AttentionShape& s, DType dtype, const char* dtype_name, bool causal, const char* path) {
  const Shape shape{s.batch, s.heads, s.seq, s.head_dim};
  const AttentionOptions options{.is_causal = causal};
  register_gpu(name("fwd", dtype_name, s, causal) + "/" + path, [=](benchmark::State& state) {
    const Tensor q = randn(shape).to(Device::cuda(0), dtype), k = randn(shape).to(Device::cuda(0), dtype),
                 v = randn(shape).to(Device::cuda(0), dtype);
    NoGradGuard no_grad;
    anvil::cuda::ScopedSdpaBackend forced(path);
    benchmark::DoNotOptimize(scaled_dot_product_attention(q, k, v, options));
    if (!ran_forced_path(state, path, false)) return;
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(scaled_dot_product_attention(q, k, v, options)); }, 3);
    report_tflops(state, forward_flops(s, causal), t);
  })->MinTime(0.1);
  register_gpu(name("fwdbwd", dtype_name, s, causal) + "/" + path, [=](benchmark::State& state) {
    Tensor q = randn(shape).to(Device::cuda(0), dtype), k = randn(shape).to(Device::cuda(0), dtype),
           v = randn(shape).to(Device::cuda(0), dtype);
    for (Tensor* t : {&q, &k, &v}) t->requires_grad_();
    const Tensor grad_out = randn(shape).to(Device::cuda(0), dtype);
    anvil::cuda::ScopedSdpaBackend forced(path);
    auto step = [&] {
      scaled_dot_product_attention(q, k, v, options).backward(grad_out);
      for (Tensor* x : {&q, &k, &v}) x->set_grad({});  // no accumulation kernel in the timing
    };
    step();
    if (!ran_forced_path(state, path, false) || !ran_forced_path(state, path, true)) return;
    const GpuTiming t = time_on_gpu(state, step, 2);
    report_tflops(state, 3.5 * forward_flops(s, causal), t);
  })->MinTime(0.1);
}

void register_shape(const AttentionShape& s, DType dtype, const char* dtype_name, bool causal) {
  const Shape shape{s.batch, s.heads, s.seq, s.head_dim};
  const AttentionOptions options{.is_causal = causal};
  register_gpu(name("fwd", dtype_name, s, causal), [=](benchmark::State& state) {
    const Tensor q = randn(shape).to(Device::cuda(0), dtype), k = randn(shape).to(Device::cuda(0), dtype),
                 v = randn(shape).to(Device::cuda(0), dtype);
    NoGradGuard no_grad;
    const GpuTiming t = time_on_gpu(
        state, [&] { benchmark::DoNotOptimize(scaled_dot_product_attention(q, k, v, options)); }, 3);
    report_tflops(state, forward_flops(s, causal), t);
  })->MinTime(0.1);
  if (dtype != kFloat32) {
    // The same forward on the kernel without tensor cores, to show what they bring.
    register_gpu(name("fwd", dtype_name, s, causal) + "/no_tensor_cores", [=](benchmark::State& state) {
      const Tensor q = randn(shape).to(Device::cuda(0), dtype), k = randn(shape).to(Device::cuda(0), dtype),
                   v = randn(shape).to(Device::cuda(0), dtype);
      NoGradGuard no_grad;
      setenv("ANVIL_ATTENTION_TENSOR_CORES", "0", 1);
      anvil::cuda::ScopedSdpaBackend flash("flash");  // the hand-written kernels, not cuDNN
      const GpuTiming t = time_on_gpu(
          state, [&] { benchmark::DoNotOptimize(scaled_dot_product_attention(q, k, v, options)); }, 3);
      unsetenv("ANVIL_ATTENTION_TENSOR_CORES");
      report_tflops(state, forward_flops(s, causal), t);
    })->MinTime(0.1);
  }
  register_gpu(name("fwdbwd", dtype_name, s, causal), [=](benchmark::State& state) {
    Tensor q = randn(shape).to(Device::cuda(0), dtype), k = randn(shape).to(Device::cuda(0), dtype),
           v = randn(shape).to(Device::cuda(0), dtype);
    for (Tensor* t : {&q, &k, &v}) t->requires_grad_();
    const Tensor grad_out = randn(shape).to(Device::cuda(0), dtype);
    const GpuTiming t = time_on_gpu(
        state,
        [&] {
          scaled_dot_product_attention(q, k, v, options).backward(grad_out);
          for (Tensor* x : {&q, &k, &v}) x->set_grad({});  // no accumulation kernel in the timing
        },
        2);
    report_tflops(state, 3.5 * forward_flops(s, causal), t);
  })->MinTime(0.1);
}

}  // namespace

void register_attention_benchmarks() {
  for (const AttentionShape& s : kShapes) {
    for (bool causal : {false, true}) {
      register_shape(s, kBFloat16, "bf16", causal);
      register_shape(s, kFloat16, "f16", causal);
      for (const char* path : {"cudnn", "flash"}) {
        register_forced(s, kBFloat16, "bf16", causal, path);
        register_forced(s, kFloat16, "f16", causal, path);
      }
    }
    register_shape(s, kFloat32, "f32", false);
  }
}

}  // namespace anvil::bench::cuda
