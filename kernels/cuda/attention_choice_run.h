#pragma once
// The runner behind attention_choice.h, for attention.cu: runs one attention
// call on the path the setting and the cached timing pick.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <string>

#include "kernels/cuda/attention_choice.h"
#include "kernels/cudnn/sdpa.h"

namespace anvil::cuda {

struct SdpaRequest {
  bool backward = false;
  int device = 0;
  DType dtype = DType::Float32;
  bool has_mask = false, dropout = false;
  bool aligned = true;  // this call's operands are 16-byte aligned (cudnn_sdpa_aligned)
  CudnnSdpaProblem problem;  // meaningful when the dtype is bf16/f16
};

// Why the cuDNN path does not take the request ("" when it may try).
std::string sdpa_cudnn_out_of_scope(const SdpaRequest& r);

// cudnn runs or declines (sdpa.h: CudnnSdpaOutcome); flash always runs.
// Both write the whole result.
struct SdpaRunners {
  std::function<CudnnSdpaOutcome()> cudnn;
  std::function<void()> flash;
};

// Runs the request on one path and records the decision
// (last_sdpa_decision); true when cuDNN's result is the one left.
bool run_sdpa(const SdpaRequest& r, cudaStream_t s, const SdpaRunners& run);

}  // namespace anvil::cuda
