#pragma once
// Fused attention on tensor cores for bfloat16 and float16 operands
// (attention_tensor_core.cu: forward, attention_tensor_core_backward.cu:
// backward). attention.cu tries these first and falls back to its own kernels
// (any dtype, head dims up to 256) when they decline.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <initializer_list>

#include "core/base/dtype.h"
#include "kernels/cuda/device/attention_tile.cuh"

namespace anvil::cuda {

// Each launches on `s` and returns true, or returns false having launched
// nothing when the problem is not one the tensor-core kernels take: a dtype
// other than bf16/f16, a head dim over 128 or not a multiple of 8, an operand
// not 16-byte aligned, a device older than sm_80, or
// ANVIL_ATTENTION_TENSOR_CORES=0 in the environment (to measure or check the
// other kernels). All operands dense: q [problems, L, E], k [problems, S, E],
// v [problems, S, Ev], out and grad_out [problems, L, Ev]; lse and row_dot
// [problems, L] float32 (row_dot = rowsum(grad_out * out)).
bool attention_forward_tensor_core(DType dtype, void* out, float* lse, const void* q, const void* k, const void* v,
                                   const dev::AttentionArgs& args, int64_t problems, cudaStream_t s);
bool attention_backward_tensor_core(DType dtype, void* grad_q, void* grad_k, void* grad_v, const void* q, const void* k,
                                    const void* v, const void* grad_out, const float* lse, const float* row_dot,
                                    const dev::AttentionArgs& args, int64_t problems, cudaStream_t s);

// Shared by the two files.
bool attention_tensor_cores_take(DType dtype, int dim_qk, int dim_v, std::initializer_list<const void*> operands);
void allow_tensor_core_shared(const void* kernel, int bytes);  // over 48 KiB of dynamic shared memory
unsigned attention_tensor_core_grid(int64_t problems, int64_t tiles);

}  // namespace anvil::cuda
