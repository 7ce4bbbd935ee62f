// Fused log-softmax + NLL (cross entropy) over logits [N, C] with integer
// targets, ignore_index and label smoothing: the formulas of
// kernels/cpu/loss.cpp, in float (double for float64).
//
// Forward: one block per row reads the row once, keeping a running max and
// sum of exp(x - max) (online softmax) and, with label smoothing, the sum of
// the logits; it writes the row's loss and its logsumexp (for the backward).
// Backward: grad = g * (exp(x - lse) - smoothing/C) - g * (1 - smoothing) at
// the target, straight from the saved logsumexp: the probabilities are never
// stored. Ignored rows get loss 0 and gradient 0.
//
// Targets outside [0, C) (other than ignore_index) are found on the device:
// that row's loss is NaN and the error is raised later (index_errors.h).
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/softmax_loss_kernels.h"
#include "kernels/cuda/device/kernel_kit.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/index_errors.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/shapes/layouts.h"

namespace anvil::cuda {
namespace {

using kit::acc_t;

template <typename C> struct Online {
  C max = -C(INFINITY), sum = C(0);
  __device__ __forceinline__ void add(C x) {
    if (x > max) {
      sum = sum * exp(max - x) + C(1);
      max = x;
    } else if (x != -C(INFINITY)) {
      sum += exp(x - max);
    }
  }
};

// As the CPU: an infinite max is the logsumexp (all -inf, or some +inf).
template <typename C> __device__ __forceinline__ C logsumexp_of(const dev::MaxSum<C>& ms) {
  return isinf(ms.max) ? ms.max : ms.max + log(ms.sum);
}

template <typename T, typename C, bool kSmooth>
__global__ void cross_entropy_kernel(C* losses, C* lse_out, const T* logits, const int64_t* targets, int64_t n,
                                     int64_t c, int64_t ignore_index, C smoothing, kit::IndexErrorRecord* rec) {
  for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
    const T* x = logits + row * c;
    Online<C> o;
    C sum_x = 0;
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      const C v = dev::cast<C>(x[j]);
      o.add(v);
      if constexpr (kSmooth) sum_x += v;
    }
    const dev::MaxSum<C> ms = dev::block_reduce_max_sum(dev::MaxSum<C>{o.max, o.sum});
    if constexpr (kSmooth) sum_x = dev::block_reduce_sum(sum_x);
    if (threadIdx.x != 0) continue;
    const C lse = logsumexp_of(ms);
    lse_out[row] = lse;
    const int64_t t = targets[row];
    if (t == ignore_index) {
      losses[row] = 0;
    } else if (t < 0 || t >= c) {
      kit::record_index_error(rec, kit::kCrossEntropy, t, c, 1);
      losses[row] = C(NAN);
    } else {
      C target_term = (C(1) - smoothing) * dev::cast<C>(x[t]);
      if constexpr (kSmooth) target_term += smoothing / static_cast<C>(c) * sum_x;
      losses[row] = lse - target_term;
    }
  }
}

template <typename T, typename C>
__global__ void cross_entropy_backward_kernel(T* grad, const C* grad_losses, const T* logits, const int64_t* targets,
                                              const C* lse, int64_t n, int64_t c, int64_t ignore_index, C smoothing,
                                              kit::IndexErrorRecord* rec) {
  const C smooth = smoothing / static_cast<C>(c > 0 ? c : 1);
  for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
    const T* x = logits + row * c;
    T* dst = grad + row * c;
    const int64_t t = targets[row];
    const bool valid = t >= 0 && t < c;
    if (t == ignore_index || !valid) {
      if (t != ignore_index && threadIdx.x == 0) kit::record_index_error(rec, kit::kCrossEntropy, t, c, 1);
      const T fill = dev::cast<T>(t == ignore_index ? C(0) : C(NAN));
      for (int64_t j = threadIdx.x; j < c; j += blockDim.x) dst[j] = fill;
      continue;
    }
    const C g = grad_losses[row], l = lse[row], at_target = g * (C(1) - smoothing);
    for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {
      C v = g * (exp(dev::cast<C>(x[j]) - l) - smooth);
      if (j == t) v -= at_target;
      dst[j] = dev::cast<T>(v);
    }
  }
}

int threads_for_row(int64_t c) { return c >= 4096 ? 512 : c >= 1024 ? 256 : c >= 128 ? 128 : 32; }

using shapes::LossShape;

}  // namespace

void cross_entropy(const View& losses, const View& logsumexp, const View& logits, const View& targets,
                   const CrossEntropyParams& p) {
  ANVIL_NVTX_RANGE("cross_entropy");
  const LossShape sh = shapes::check_cross_entropy(losses, logsumexp, logits, targets);
  ANVIL_CHECK(is_floating(logits.dtype), "cross_entropy: dtype ", logits.dtype,
              " is not supported on CUDA (floating dtypes only)");
  DeviceGuard guard(logits.device_index);
  raise_pending_index_error(logits.device_index);
  if (sh.n == 0) return;
  const cudaStream_t s = stream(logits.device_index);
  kit::IndexErrorRecord* rec = index_error_record(logits.device_index);
  visit_floating_device_dtype("cross_entropy", logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    const DType acc_dtype = sizeof(C) == 8 ? kFloat64 : kFloat32;
    DenseArg x(cuda_runtime(), logits, logits.dtype, DenseArg::In), t(cuda_runtime(), targets, kInt64, DenseArg::In);
    DenseArg loss(cuda_runtime(), losses, acc_dtype, DenseArg::Out),
        lse(cuda_runtime(), logsumexp, acc_dtype, DenseArg::Out);
    const unsigned grid = capped_blocks(sh.n, 1, kMaxRowBlocks);
    const int threads = threads_for_row(sh.c);
    const C ls = static_cast<C>(p.label_smoothing);
    if (p.label_smoothing != 0)
      launch_kernel(cross_entropy_kernel<T, C, true>, grid, threads, 0, s)(
          loss.ptr<C>(), lse.ptr<C>(), x.ptr<T>(), t.ptr<int64_t>(), sh.n, sh.c, p.ignore_index, ls, rec);
    else
      launch_kernel(cross_entropy_kernel<T, C, false>, grid, threads, 0, s)(
          loss.ptr<C>(), lse.ptr<C>(), x.ptr<T>(), t.ptr<int64_t>(), sh.n, sh.c, p.ignore_index, ls, rec);
    ANVIL_CUDA_CHECK_LAUNCH("cross_entropy_kernel");
    loss.commit();
    lse.commit();
  });
}

void cross_entropy_backward(const View& grad_logits, const View& grad_losses, const View& logits, const View& targets,
                            const View& logsumexp, const CrossEntropyParams& p) {
  ANVIL_NVTX_RANGE("cross_entropy_backward");
  const LossShape sh = shapes::check_cross_entropy_backward(grad_logits, grad_losses, logits, targets, logsumexp);
  ANVIL_CHECK(grad_logits.dtype == logits.dtype, "cross_entropy_backward: grad_logits dtype ", grad_logits.dtype,
              " differs from logits dtype ", logits.dtype);
  ANVIL_CHECK(is_floating(logits.dtype), "cross_entropy_backward: dtype ", logits.dtype,
              " is not supported on CUDA (floating dtypes only)");
  DeviceGuard guard(logits.device_index);
  raise_pending_index_error(logits.device_index);
  if (sh.n == 0 || sh.c == 0) return;
  const cudaStream_t s = stream(logits.device_index);
  kit::IndexErrorRecord* rec = index_error_record(logits.device_index);
  visit_floating_device_dtype("cross_entropy_backward", logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    const DType acc_dtype = sizeof(C) == 8 ? kFloat64 : kFloat32;
    DenseArg x(cuda_runtime(), logits, logits.dtype, DenseArg::In), t(cuda_runtime(), targets, kInt64, DenseArg::In);
    DenseArg g(cuda_runtime(), grad_losses, acc_dtype, DenseArg::In),
        lse(cuda_runtime(), logsumexp, acc_dtype, DenseArg::In);
    DenseArg grad(cuda_runtime(), grad_logits, logits.dtype, DenseArg::Out);
    launch_kernel(cross_entropy_backward_kernel<T, C>, capped_blocks(sh.n, 1, kMaxRowBlocks), threads_for_row(sh.c), 0,
                  s)(grad.ptr<T>(), g.ptr<C>(), x.ptr<T>(), t.ptr<int64_t>(), lse.ptr<C>(), sh.n, sh.c, p.ignore_index,
                     static_cast<C>(p.label_smoothing), rec);
    ANVIL_CUDA_CHECK_LAUNCH("cross_entropy_backward_kernel");
    grad.commit();
  });
}

ANVIL_REGISTER_KERNEL(kernel::CrossEntropy, CUDA, cross_entropy);
ANVIL_REGISTER_KERNEL(kernel::CrossEntropyBackward, CUDA, cross_entropy_backward);

}  // namespace anvil::cuda
