// Kernels that complete the cuDNN pooling and batch norm paths; see
// norm_pool_kernels.h. Each mirrors the CPU kernel's arithmetic (the same
// window rules, the same accumulation types) so results agree closely.
#include <algorithm>
#include <cmath>

#include "core/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/device/block_reduce.cuh"
#include "kernels/cuda/device/dtype.cuh"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/grid.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cudnn/norm_pool_kernels.h"
#include "kernels/ops/conv_pool_kernels.h"

namespace anvil::cuda {
namespace {

constexpr int kThreads = 256;

// ---- pooling ----

struct Window {
  int64_t h0, h1, w0, w1, divisor;
};

__device__ __forceinline__ Window window_at(const PoolShape& g, int64_t oh, int64_t ow) {
  Window win;
  win.h0 = oh * g.sh - g.ph;
  win.w0 = ow * g.sw - g.pw;
  win.h1 = min(win.h0 + g.kh, g.h + g.ph);
  win.w1 = min(win.w0 + g.kw, g.w + g.pw);
  const int64_t padded_size = (win.h1 - win.h0) * (win.w1 - win.w0);
  win.h0 = max(win.h0, int64_t{0});
  win.w0 = max(win.w0, int64_t{0});
  win.h1 = min(win.h1, g.h);
  win.w1 = min(win.w1, g.w);
  win.divisor = g.count_include_pad ? padded_size : (win.h1 - win.h0) * (win.w1 - win.w0);
  return win;
}

// First maximum in row-major window order; a NaN wins (the first NaN).
template <typename T> __device__ int64_t window_argmax(const T* plane, const PoolShape& g, const Window& win) {
  int64_t best_idx = win.h0 * g.w + win.w0;
  double best = -INFINITY;
  bool first = true;
  for (int64_t ih = win.h0; ih < win.h1; ++ih) {
    for (int64_t iw = win.w0; iw < win.w1; ++iw) {
      const double v = dev::cast<double>(plane[ih * g.w + iw]);
      if (first || v > best || (isnan(v) && !isnan(best))) {
        best = v;
        best_idx = ih * g.w + iw;
        first = false;
      }
      if (isnan(best)) return best_idx;
    }
  }
  return best_idx;
}

template <typename T>
__global__ void pool_forward_kernel(PoolKind kind, T* __restrict__ out, const T* __restrict__ in, PoolShape g) {
  const int64_t total = g.planes * g.ho * g.wo;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ow = i % g.wo, oh = (i / g.wo) % g.ho, pl = i / (g.wo * g.ho);
    const T* plane = in + pl * g.h * g.w;
    const Window win = window_at(g, oh, ow);
    if (kind == PoolKind::Max) {
      out[i] = plane[window_argmax(plane, g, win)];
    } else {
      double sum = 0;
      for (int64_t ih = win.h0; ih < win.h1; ++ih)
        for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += dev::cast<double>(plane[ih * g.w + iw]);
      out[i] = dev::cast<T>(sum / static_cast<double>(win.divisor));
    }
  }
}

// Outputs [lo, hi) along one dim whose window [o*s - p, o*s - p + k) holds i.
__device__ __forceinline__ void covering(int64_t i, int64_t k, int64_t s, int64_t p, int64_t out_size, int64_t& lo,
                                         int64_t& hi) {
  const int64_t a = i + p - k + 1;  // smallest o*s with o*s - p + k > i
  lo = a <= 0 ? 0 : (a + s - 1) / s;
  hi = min((i + p) / s + 1, out_size);
}

template <typename T>
__global__ void pool_backward_kernel(PoolKind kind, T* __restrict__ grad_in, const T* __restrict__ grad_out,
                                     const T* __restrict__ in, PoolShape g) {
  using A = dev::acc_t<T>;
  const int64_t total = g.planes * g.h * g.w;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t iw = i % g.w, ih = (i / g.w) % g.h, pl = i / (g.w * g.h);
    const int64_t here = ih * g.w + iw;
    const T* go = grad_out + pl * g.ho * g.wo;
    const T* plane = kind == PoolKind::Max ? in + pl * g.h * g.w : nullptr;
    int64_t oh0, oh1, ow0, ow1;
    covering(ih, g.kh, g.sh, g.ph, g.ho, oh0, oh1);
    covering(iw, g.kw, g.sw, g.pw, g.wo, ow0, ow1);
    A acc = 0;
    // Same order as the CPU's scatter: windows in row-major output order.
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const Window win = window_at(g, oh, ow);
        if (kind == PoolKind::Max) {
          if (window_argmax(plane, g, win) == here) acc += static_cast<A>(dev::cast<double>(go[oh * g.wo + ow]));
        } else {
          // The CPU rounds each share to the storage type's compute type first.
          acc += static_cast<A>(dev::cast<double>(go[oh * g.wo + ow]) / static_cast<double>(win.divisor));
        }
      }
    }
    grad_in[i] = dev::cast<T>(static_cast<double>(acc));
  }
}

// ---- batch norm (evaluation mode) ----

template <typename P>
__global__ void bn_eval_stats_kernel(P* save_mean, P* save_invstd, const P* running_mean, const P* running_var,
                                     int64_t c, double eps) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < c; i += int64_t{gridDim.x} * blockDim.x) {
    save_mean[i] = running_mean[i];
    save_invstd[i] = static_cast<P>(1.0 / sqrt(static_cast<double>(running_var[i]) + eps));
  }
}

template <typename T, typename P>
__global__ void bn_eval_grad_input_kernel(T* __restrict__ grad_in, const T* __restrict__ grad_out,
                                          const P* __restrict__ weight, const P* __restrict__ invstd, int64_t c,
                                          int64_t s, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ch = (i / s) % c;
    const double k = static_cast<double>(invstd[ch]) * (weight ? static_cast<double>(weight[ch]) : 1.0);
    grad_in[i] = dev::cast<T>(k * dev::cast<double>(grad_out[i]));
  }
}

// Element j of channel ch in a dense [n, c, s] tensor.
__device__ __forceinline__ int64_t channel_elem(int64_t j, int64_t ch, int64_t c, int64_t s) {
  return ((j / s) * c + ch) * s + j % s;
}

// One block per channel: sums over the channel's n * s values, in double.
// grad_weight = sum g * (x - mean) * invstd, grad_bias = sum g (either may be null).
template <typename T, typename P>
__global__ void bn_grad_params_kernel(P* grad_weight, P* grad_bias, const T* __restrict__ grad_out,
                                      const T* __restrict__ x, const P* __restrict__ mean, const P* __restrict__ invstd,
                                      int64_t n, int64_t c, int64_t s) {
  const int64_t ch = blockIdx.x;
  const double m = static_cast<double>(mean[ch]);
  double sg = 0, sgx = 0;
  for (int64_t j = threadIdx.x; j < n * s; j += blockDim.x) {
    const int64_t idx = channel_elem(j, ch, c, s);
    const double gv = dev::cast<double>(grad_out[idx]);
    sg += gv;
    sgx += gv * (dev::cast<double>(x[idx]) - m);
  }
  sg = dev::block_reduce_sum(sg);
  sgx = dev::block_reduce_sum(sgx);
  if (threadIdx.x == 0) {
    if (grad_weight) grad_weight[ch] = static_cast<P>(sgx * static_cast<double>(invstd[ch]));
    if (grad_bias) grad_bias[ch] = static_cast<P>(sg);
  }
}

// ---- batch norm (training mode, for a device without cuDNN) ----

// One block per channel: the batch mean and biased variance in two passes in
// double (as the CPU), the saved statistics, and the running ones (may be null).
template <typename T, typename P>
__global__ void bn_train_stats_kernel(P* save_mean, P* save_invstd, P* running_mean, P* running_var,
                                      const T* __restrict__ x, int64_t n, int64_t c, int64_t s, double momentum,
                                      double eps) {
  const int64_t ch = blockIdx.x, count = n * s;
  double sum = 0;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) sum += dev::cast<double>(x[channel_elem(j, ch, c, s)]);
  const double mean = dev::block_reduce_sum(sum) / static_cast<double>(count);
  double sq = 0;
  for (int64_t j = threadIdx.x; j < count; j += blockDim.x) {
    const double d = dev::cast<double>(x[channel_elem(j, ch, c, s)]) - mean;
    sq += d * d;
  }
  const double var = dev::block_reduce_sum(sq) / static_cast<double>(count);
  if (threadIdx.x == 0) {
    save_mean[ch] = static_cast<P>(mean);
    save_invstd[ch] = static_cast<P>(1.0 / sqrt(var + eps));
    const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
    if (running_mean)
      running_mean[ch] = static_cast<P>((1 - momentum) * static_cast<double>(running_mean[ch]) + momentum * mean);
    if (running_var)
      running_var[ch] = static_cast<P>((1 - momentum) * static_cast<double>(running_var[ch]) + momentum * var * unbias);
  }
}

// out = (x - mean) * (invstd * weight) + bias, the per-element step in the
// compute type (float for float32 and 16-bit floats), as the CPU.
template <typename T, typename P>
__global__ void bn_apply_kernel(T* __restrict__ out, const T* __restrict__ x, const P* __restrict__ mean,
                                const P* __restrict__ invstd, const P* __restrict__ weight, const P* __restrict__ bias,
                                int64_t c, int64_t s, int64_t total) {
  using C = dev::acc_t<T>;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ch = (i / s) % c;
    const double w = weight ? static_cast<double>(weight[ch]) : 1.0, b = bias ? static_cast<double>(bias[ch]) : 0.0;
    const C m = static_cast<C>(mean[ch]), scale = static_cast<C>(static_cast<double>(invstd[ch]) * w);
    out[i] =
        dev::cast<T>(static_cast<double>((static_cast<C>(dev::cast<double>(x[i])) - m) * scale + static_cast<C>(b)));
  }
}

// grad_in of training-mode batch norm, the statistics depending on x:
// k * (g - mean(g) - xhat * mean(g * xhat)), k = invstd * weight, from the
// per-channel sums sum_g and sum_g_xhat (= sum g * xhat).
template <typename T, typename P>
__global__ void bn_train_grad_input_kernel(T* __restrict__ grad_in, const T* __restrict__ grad_out,
                                           const T* __restrict__ x, const P* __restrict__ weight,
                                           const P* __restrict__ mean, const P* __restrict__ invstd,
                                           const P* __restrict__ sum_g, const P* __restrict__ sum_g_xhat, int64_t c,
                                           int64_t s, int64_t count, int64_t total) {
  using C = dev::acc_t<T>;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t ch = (i / s) % c;
    const double inv = static_cast<double>(invstd[ch]);
    const double k = inv * (weight ? static_cast<double>(weight[ch]) : 1.0);
    const C kt = static_cast<C>(k), shift = static_cast<C>(-k * static_cast<double>(sum_g[ch]) / count);
    const C slope = static_cast<C>(-k * inv * static_cast<double>(sum_g_xhat[ch]) / count);
    const C xc = static_cast<C>(dev::cast<double>(x[i])) - static_cast<C>(mean[ch]);
    grad_in[i] =
        dev::cast<T>(static_cast<double>(kt * static_cast<C>(dev::cast<double>(grad_out[i])) + shift + slope * xc));
  }
}

template <typename F> void dispatch_param(DType param, F&& f) {
  if (param == DType::Float64)
    f(double{});
  else
    f(float{});
}

}  // namespace

void pool_forward_dense(PoolKind kind, DType dtype, void* out, const void* in, const PoolShape& g,
                        cudaStream_t stream) {
  const int64_t total = g.planes * g.ho * g.wo;
  if (total == 0) return;
  visit_floating_device_dtype("pool2d", dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(pool_forward_kernel<T>, capped_blocks(total, kThreads), kThreads, 0, stream)(
        kind, static_cast<T*>(out), static_cast<const T*>(in), g);
    ANVIL_CUDA_CHECK_LAUNCH("pool_forward_kernel");
  });
}

void pool_backward_dense(PoolKind kind, DType dtype, void* grad_in, const void* grad_out, const void* in,
                         const PoolShape& g, cudaStream_t stream) {
  const int64_t total = g.planes * g.h * g.w;
  if (total == 0) return;
  visit_floating_device_dtype("pool2d_backward", dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(pool_backward_kernel<T>, capped_blocks(total, kThreads), kThreads, 0, stream)(
        kind, static_cast<T*>(grad_in), static_cast<const T*>(grad_out), static_cast<const T*>(in), g);
    ANVIL_CUDA_CHECK_LAUNCH("pool_backward_kernel");
  });
}

void batch_norm_eval_stats(DType param, void* save_mean, void* save_invstd, const void* running_mean,
                           const void* running_var, int64_t c, double eps, cudaStream_t stream) {
  if (c == 0) return;
  if (param == DType::Float64) {
    launch_kernel(bn_eval_stats_kernel<double>, capped_blocks(c, kThreads), kThreads, 0, stream)(
        static_cast<double*>(save_mean), static_cast<double*>(save_invstd), static_cast<const double*>(running_mean),
        static_cast<const double*>(running_var), c, eps);
  } else {
    launch_kernel(bn_eval_stats_kernel<float>, capped_blocks(c, kThreads), kThreads, 0, stream)(
        static_cast<float*>(save_mean), static_cast<float*>(save_invstd), static_cast<const float*>(running_mean),
        static_cast<const float*>(running_var), c, eps);
  }
  ANVIL_CUDA_CHECK_LAUNCH("bn_eval_stats_kernel");
}

void batch_norm_eval_backward(DType dtype, DType param, void* grad_in, void* grad_weight, void* grad_bias,
                              const void* grad_out, const void* x, const void* weight, const void* mean,
                              const void* invstd, int64_t n, int64_t c, int64_t s, cudaStream_t stream) {
  visit_floating_device_dtype("batch_norm_backward", dtype, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto ptag) {
      using P = decltype(ptag);
      const int64_t total = n * c * s;
      if (grad_in && total > 0) {
        launch_kernel(bn_eval_grad_input_kernel<T, P>, capped_blocks(total, kThreads), kThreads, 0, stream)(
            static_cast<T*>(grad_in), static_cast<const T*>(grad_out), static_cast<const P*>(weight),
            static_cast<const P*>(invstd), c, s, total);
        ANVIL_CUDA_CHECK_LAUNCH("bn_eval_grad_input_kernel");
      }
      if ((grad_weight || grad_bias) && c > 0) {
        launch_kernel(bn_grad_params_kernel<T, P>, static_cast<unsigned>(c), kThreads, 0, stream)(
            static_cast<P*>(grad_weight), static_cast<P*>(grad_bias), static_cast<const T*>(grad_out),
            static_cast<const T*>(x), static_cast<const P*>(mean), static_cast<const P*>(invstd), n, c, s);
        ANVIL_CUDA_CHECK_LAUNCH("bn_grad_params_kernel");
      }
    };
    dispatch_param(param, run);
  });
}

void batch_norm_train_stats(DType dtype, DType param, void* save_mean, void* save_invstd, void* running_mean,
                            void* running_var, const void* x, int64_t n, int64_t c, int64_t s, double momentum,
                            double eps, cudaStream_t stream) {
  if (c == 0) return;
  visit_floating_device_dtype("batch_norm", dtype, [&](auto tag) {
    using T = decltype(tag);
    dispatch_param(param, [&](auto ptag) {
      using P = decltype(ptag);
      launch_kernel(bn_train_stats_kernel<T, P>, static_cast<unsigned>(c), kThreads, 0, stream)(
          static_cast<P*>(save_mean), static_cast<P*>(save_invstd), static_cast<P*>(running_mean),
          static_cast<P*>(running_var), static_cast<const T*>(x), n, c, s, momentum, eps);
      ANVIL_CUDA_CHECK_LAUNCH("bn_train_stats_kernel");
    });
  });
}

void batch_norm_apply(DType dtype, DType param, void* out, const void* x, const void* mean, const void* invstd,
                      const void* weight, const void* bias, int64_t n, int64_t c, int64_t s, cudaStream_t stream) {
  const int64_t total = n * c * s;
  if (total == 0) return;
  visit_floating_device_dtype("batch_norm", dtype, [&](auto tag) {
    using T = decltype(tag);
    dispatch_param(param, [&](auto ptag) {
      using P = decltype(ptag);
      launch_kernel(bn_apply_kernel<T, P>, capped_blocks(total, kThreads), kThreads, 0, stream)(
          static_cast<T*>(out), static_cast<const T*>(x), static_cast<const P*>(mean), static_cast<const P*>(invstd),
          static_cast<const P*>(weight), static_cast<const P*>(bias), c, s, total);
      ANVIL_CUDA_CHECK_LAUNCH("bn_apply_kernel");
    });
  });
}

void batch_norm_train_backward(DType dtype, DType param, void* grad_in, void* sum_g_xhat, void* sum_g,
                               const void* grad_out, const void* x, const void* weight, const void* mean,
                               const void* invstd, int64_t n, int64_t c, int64_t s, cudaStream_t stream) {
  if (c == 0) return;
  visit_floating_device_dtype("batch_norm_backward", dtype, [&](auto tag) {
    using T = decltype(tag);
    dispatch_param(param, [&](auto ptag) {
      using P = decltype(ptag);
      launch_kernel(bn_grad_params_kernel<T, P>, static_cast<unsigned>(c), kThreads, 0, stream)(
          static_cast<P*>(sum_g_xhat), static_cast<P*>(sum_g), static_cast<const T*>(grad_out),
          static_cast<const T*>(x), static_cast<const P*>(mean), static_cast<const P*>(invstd), n, c, s);
      ANVIL_CUDA_CHECK_LAUNCH("bn_grad_params_kernel");
      const int64_t total = n * c * s;
      if (!grad_in || total == 0) return;
      launch_kernel(bn_train_grad_input_kernel<T, P>, capped_blocks(total, kThreads), kThreads, 0, stream)(
          static_cast<T*>(grad_in), static_cast<const T*>(grad_out), static_cast<const T*>(x),
          static_cast<const P*>(weight), static_cast<const P*>(mean), static_cast<const P*>(invstd),
          static_cast<const P*>(sum_g), static_cast<const P*>(sum_g_xhat), c, s, n * s, total);
      ANVIL_CUDA_CHECK_LAUNCH("bn_train_grad_input_kernel");
    });
  });
}

}  // namespace anvil::cuda
