#pragma once
// cuDNN's fused flash attention (sdpa.cpp), one of the two paths of
// kernel::AttentionForward/backward; ../cuda/attention_choice.h decides
// which one runs. No cuDNN header here: attention.cu includes this file.
// The emulated GPU has no cuDNN: ../cuda/emulator/library_paths.cu defines
// these functions there, and they always decline.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/base/dtype.h"
#include "kernels/ops/attention_kernels.h"

namespace anvil::cuda {

class CudaRuntime;

// One attention problem as cuDNN's graph sees it: dense q [B, H, L, E],
// k [B, H, S, E], v [B, H, S, Ev], out and grad_out [B, H, L, Ev], the
// log-sum-exp [B, H, L] float32 (cuDNN's softmax "stats": natural log of the
// scaled, masked scores' row sums, the same value the flash kernels save, so
// either backward takes either forward's lse).
struct CudnnSdpaProblem {
  DType dtype = DType::BFloat16;
  int64_t batch = 0, heads = 0, len_q = 0, len_k = 0, dim_qk = 0, dim_v = 0;
  bool causal = false;  // top-left aligned, as AttentionParams::is_causal
  float scale = 1.0f;  // passed by value at execution: not part of the plan
};

struct CudnnSdpaForwardArgs {
  void* out = nullptr;
  float* lse = nullptr;
  const void *q = nullptr, *k = nullptr, *v = nullptr;
};

struct CudnnSdpaBackwardArgs {
  void *grad_q = nullptr, *grad_k = nullptr, *grad_v = nullptr;
  const void *q = nullptr, *k = nullptr, *v = nullptr, *out = nullptr, *grad_out = nullptr;
  const float* lse = nullptr;
};

// False on the emulated GPU (no cuDNN library there).
bool cudnn_sdpa_available();

// Builds and finalises every tensor and operation descriptor of the forward
// or backward graph for `p` (cuDNN checks each op's shapes and types there),
// stopping before the operation graph, which needs a GPU and a handle.
// Returns "" or cuDNN's complaint. Needs no GPU: tests run it everywhere
// cuDNN's library is present.
std::string cudnn_sdpa_check_ops(const CudnnSdpaProblem& p, bool backward);

// The problem in words, for decline messages and logs:
// "bfloat16 B=2 H=4 L=65 S=33 E=32 Ev=32 causal backward".
inline std::string cudnn_sdpa_text(const CudnnSdpaProblem& p, bool backward) {
  return std::string(dtype_name(p.dtype)) + " B=" + std::to_string(p.batch) + " H=" + std::to_string(p.heads) +
         " L=" + std::to_string(p.len_q) + " S=" + std::to_string(p.len_k) + " E=" + std::to_string(p.dim_qk) +
         " Ev=" + std::to_string(p.dim_v) + (p.causal ? " causal" : "") + (backward ? " backward" : " forward");
}

// What one cuDNN call did: ran (`why` empty) or declined, with no attention
// result written. A problem-level decline (cuDNN too old, no plan for the
// graph) repeats for every call of the same problem, so a caller may keep
// it; a call-level one (an operand not 16-byte aligned, a failed workspace
// allocation or execution) says nothing about the next call.
struct CudnnSdpaOutcome {
  std::string why;
  bool problem_level = false;
  bool ran() const { return why.empty(); }
};

// cuDNN's tensors are declared 16-byte aligned: misaligned operands decline.
inline bool cudnn_sdpa_aligned(std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return true;
}
inline bool cudnn_sdpa_aligned(const CudnnSdpaForwardArgs& a) {
  return cudnn_sdpa_aligned({a.out, a.lse, a.q, a.k, a.v});
}
inline bool cudnn_sdpa_aligned(const CudnnSdpaBackwardArgs& a) {
  return cudnn_sdpa_aligned({a.grad_q, a.grad_k, a.grad_v, a.q, a.k, a.v, a.out, a.grad_out, a.lse});
}

// Each runs on `s`. A decline before execution leaves the outputs untouched;
// the backward may have zeroed its own float32 dQ accumulator (workspace)
// before cuDNN's execute fails, never an output. Declines: cuDNN is absent
// or older than this path needs, an operand is not 16-byte aligned, the
// workspace cannot be allocated, or cuDNN built no plan for the graph (its
// error text). Plans (and problem-level declines) are kept per (cuDNN
// handle, problem): building one takes milliseconds to seconds. The problem
// must already be in scope (attention_choice.cpp: sdpa_cudnn_out_of_scope).
CudnnSdpaOutcome cudnn_sdpa_forward(CudaRuntime& backend, int device, cudaStream_t s, const CudnnSdpaProblem& p,
                                    const CudnnSdpaForwardArgs& a);
CudnnSdpaOutcome cudnn_sdpa_backward(CudaRuntime& backend, int device, cudaStream_t s, const CudnnSdpaProblem& p,
                                     const CudnnSdpaBackwardArgs& a);

}  // namespace anvil::cuda
