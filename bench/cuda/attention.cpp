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
// Names: attn/<fwd|fwdbwd>/<dtype>/b<B>h<H>s<S>d<E>[/causal][/no_tensor_cores]:
// 16-bit forwards run on tensor cores (attention_tensor_core.cu); the
// no_tensor_cores rows time the same call with ANVIL_ATTENTION_TENSOR_CORES=0.
#include <anvil/anvil.h>

#include <cstdlib>
#include <string>

#include "bench/cuda/bench_cuda_util.h"

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
  return std::string("attn/") + pass + "/" + dtype + "/b" + std::to_string(s.batch) + "h" +
         std::to_string(s.heads) + "s" + std::to_string(s.seq) + "d" + std::to_string(s.head_dim) +
         (causal ? "/causal" : "");
}

void register_shape(const AttentionShape& s, DType dtype, const char* dtype_name, bool causal) {
  const Shape shape{s.batch, s.heads, s.seq, s.head_dim};
  const AttentionOptions options{.is_causal = causal};
  register_gpu(name("fwd", dtype_name, s, causal), [=](benchmark::State& state) {
    const Tensor q = randn(shape).to(Device::cuda(0), dtype), k = randn(shape).to(Device::cuda(0), dtype),
                 v = randn(shape).to(Device::cuda(0), dtype);
    NoGradGuard no_grad;
    const GpuTiming t =
        time_on_gpu(state, [&] { benchmark::DoNotOptimize(scaled_dot_product_attention(q, k, v, options)); }, 3);
    report_tflops(state, forward_flops(s, causal), t);
  })->MinTime(0.1);
  if (dtype != kFloat32) {
    // The same forward on the kernel without tensor cores, to show what they bring.
    register_gpu(name("fwd", dtype_name, s, causal) + "/no_tensor_cores", [=](benchmark::State& state) {
      const Tensor q = randn(shape).to(Device::cuda(0), dtype), k = randn(shape).to(Device::cuda(0), dtype),
                   v = randn(shape).to(Device::cuda(0), dtype);
      NoGradGuard no_grad;
      setenv("ANVIL_ATTENTION_TENSOR_CORES", "0", 1);
      const GpuTiming t =
          time_on_gpu(state, [&] { benchmark::DoNotOptimize(scaled_dot_product_attention(q, k, v, options)); }, 3);
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
    }
    register_shape(s, kFloat32, "f32", false);
  }
}

}  // namespace anvil::bench::cuda
