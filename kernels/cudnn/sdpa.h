#pragma once
// cuDNN's fused flash attention (sdpa.cpp), one of the two paths of
// CudaBackend::attention_forward/backward; ../cuda/attention_choice.h decides
// which one runs. No cuDNN header here: attention.cu includes this file.
// The emulated GPU has no cuDNN: ../cuda/emulator/library_paths.cu defines
// these functions there, and they always decline.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "core/base/dtype.h"

namespace anvil::cuda {

class CudaBackend;

// One attention problem as cuDNN's graph sees it: dense q [B, H, L, E],
// k [B, H, S, E], v [B, H, S, Ev], out and grad_out [B, H, L, Ev], the
// log-sum-exp [B, H, L] float32 (cuDNN's softmax "stats": natural log of the
// scaled, masked scores' row sums, the same value the flash kernels save, so
// either backward takes either forward's lse).
struct CudnnSdpaProblem {
  DType dtype = DType::BFloat16;
  int64_t batch = 0, heads = 0, len_q = 0, len_k = 0, dim_qk = 0, dim_v = 0;
  bool causal = false;  // top-left aligned, as AttentionParams::is_causal
  float scale = 1.0f;   // passed by value at execution: not part of the plan
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

// Each runs on `s` and returns "", or returns why it declined having
// launched nothing: cuDNN is absent or older than this path needs, an operand
// is not 16-byte aligned, or cuDNN built no plan for the graph (its error
// text). Plans (and declines) are kept per (cuDNN handle, problem): building
// one takes milliseconds to seconds. The problem must already be in scope
// (attention_choice.cpp: sdpa_cudnn_out_of_scope).
std::string cudnn_sdpa_forward(CudaBackend& backend, int device, cudaStream_t s, const CudnnSdpaProblem& p,
                               const CudnnSdpaForwardArgs& a);
std::string cudnn_sdpa_backward(CudaBackend& backend, int device, cudaStream_t s, const CudnnSdpaProblem& p,
                                const CudnnSdpaBackwardArgs& a);

}  // namespace anvil::cuda
