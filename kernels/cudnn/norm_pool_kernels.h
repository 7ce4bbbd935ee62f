#pragma once
// Hand-written kernels that complete the cuDNN paths (norm_pool_kernels.cu):
// the pooling cases cuDNN does not cover or covers with other semantics,
// batch norm's evaluation-mode pieces, and batch norm's training mode for a
// device without cuDNN (the emulated GPU: kernels/cuda/emulator/). All take dense row-major buffers on
// the current device and queue on `stream`.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/base/dtype.h"
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/shapes/geometry.h"

namespace anvil::cuda {

// Pooling over `planes` dense [h, w] planes into [ho, wo] planes, windows as
// the CPU kernels define them (kernels/cpu/pool.cpp): the geometry both
// backends check and share (kernels/shapes/geometry.h).
using PoolShape = shapes::PoolGeometry;

// Forward for any output size (ceil-mode sizes included); sums in double.
void pool_forward_dense(PoolKind kind, DType dtype, void* out, const void* in, const PoolShape& g, cudaStream_t stream);
// grad_in = the gradient of pooling, gathered per input element (no atomics,
// deterministic). Max pooling gives each window's gradient to its first
// maximum in row-major window order (a NaN wins), exactly as the CPU does.
void pool_backward_dense(PoolKind kind, DType dtype, void* grad_in, const void* grad_out, const void* in,
                         const PoolShape& g, cudaStream_t stream);

// Batch norm in evaluation mode. Statistics and parameters are in `param`
// type (float64 for float64 inputs, float32 otherwise), x/g in `dtype`,
// [n, c, s] dense. weight may be null (ones).
// save_mean = running_mean, save_invstd = 1 / sqrt(running_var + eps) (in double).
void batch_norm_eval_stats(DType param, void* save_mean, void* save_invstd, const void* running_mean,
                           const void* running_var, int64_t c, double eps, cudaStream_t stream);
// grad_in = g * invstd * weight (may be null: not computed);
// grad_weight = sum g * (x - mean) * invstd, grad_bias = sum g (either may be null).
void batch_norm_eval_backward(DType dtype, DType param, void* grad_in, void* grad_weight, void* grad_bias,
                              const void* grad_out, const void* x, const void* weight, const void* mean,
                              const void* invstd, int64_t n, int64_t c, int64_t s, cudaStream_t stream);

// Batch norm in training mode (x, grad_out, grad_in: [n, c, s] dense in
// `dtype`; per-channel values in `param`), the CPU kernel's arithmetic:
// save_mean = batch mean, save_invstd = 1 / sqrt(biased var + eps); the
// running statistics (each may be null) move by `momentum` towards the batch
// mean and the unbiased batch variance. n * s must exceed 1.
void batch_norm_train_stats(DType dtype, DType param, void* save_mean, void* save_invstd, void* running_mean,
                            void* running_var, const void* x, int64_t n, int64_t c, int64_t s, double momentum,
                            double eps, cudaStream_t stream);
// out = (x - mean) * invstd * weight + bias; weight and bias may be null.
void batch_norm_apply(DType dtype, DType param, void* out, const void* x, const void* mean, const void* invstd,
                      const void* weight, const void* bias, int64_t n, int64_t c, int64_t s, cudaStream_t stream);
// sum_g_xhat (the weight's gradient) and sum_g (the bias's) over each channel,
// both required; grad_in (may be null) = k * (g - sum_g / count - xhat *
// sum_g_xhat / count), k = invstd * weight (weight may be null: ones).
void batch_norm_train_backward(DType dtype, DType param, void* grad_in, void* sum_g_xhat, void* sum_g,
                               const void* grad_out, const void* x, const void* weight, const void* mean,
                               const void* invstd, int64_t n, int64_t c, int64_t s, cudaStream_t stream);

}  // namespace anvil::cuda
