// Batch norm (per channel of [N, C, *]) and layer norm (per row of
// [rows, cols]). Statistics are accumulated in double with a two-pass
// mean/variance, so float32 inputs with a large mean stay accurate. The saved
// statistics (mean, invstd/rstd) may be float32 or float64 views: float64 ones
// keep float64 gradient checks exact. float16/bfloat16 compute in float.
// float32 layer norm rows take the vector kernels (vector_math.h): the same
// two passes in float lanes, each row's lanes added in double.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/base/error.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/norm_kernels.h"
#include "kernels/cpu/dense_buffer.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/shapes/layouts.h"

namespace anvil::cpu {
namespace {

constexpr int64_t kParallelNormElems = 1 << 14;
// parallel_for's cost per element that puts its threshold at kParallelNormElems elements.
constexpr int64_t kNormCostPerElement = kParallelGrain / kParallelNormElems;

using shapes::channel_layout;
using shapes::ChannelLayout;
using shapes::row_layout;
using shapes::RowLayout;

std::vector<double> values_or(const View* v, int64_t n, double fallback) {
  return v ? dense_copy<double>(*v) : std::vector<double>(static_cast<size_t>(n), fallback);
}

// --- batch norm ---

// Per-channel batch mean and biased variance.
template <typename T>
void channel_moments(const T* x, const ChannelLayout& l, std::vector<double>& mean, std::vector<double>& var) {
  mean.assign(l.c, 0.0);
  var.assign(l.c, 0.0);
  const double count = static_cast<double>(l.count());
#pragma omp parallel for schedule(static) if (l.n * l.c * l.s > kParallelNormElems)
  for (int64_t c = 0; c < l.c; ++c) {
    // omp simd: lets the compiler split each sum into vector lanes (a plain
    // loop is one serial chain of double adds, 4 cycles per element).
    double sum = 0;
    for (int64_t i = 0; i < l.n; ++i) {
      const T* p = x + (i * l.c + c) * l.s;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = 0; j < l.s; ++j) sum += p[j];
    }
    const double m = sum / count;
    double sq = 0;
    for (int64_t i = 0; i < l.n; ++i) {
      const T* p = x + (i * l.c + c) * l.s;
#pragma omp simd reduction(+ : sq)
      for (int64_t j = 0; j < l.s; ++j) {
        const double d = p[j] - m;
        sq += d * d;
      }
    }
    mean[c] = m;
    var[c] = sq / count;
  }
}

template <typename T>
void batch_norm_typed(const View& out_view, const View& save_mean, const View& save_invstd, const View& in_view,
                      const View* weight, const View* bias, const View* running_mean, const View* running_var,
                      const BatchNormParams& p) {
  const ChannelLayout l = channel_layout("batch_norm", in_view.shape);
  const DenseIn<T> x(in_view);
  std::vector<double> mean, var;
  if (p.training) {
    channel_moments(x.get(), l, mean, var);
    const double unbias = static_cast<double>(l.count()) / static_cast<double>(l.count() - 1);
    if (running_mean) {
      std::vector<double> rm = dense_copy<double>(*running_mean);
      for (int64_t c = 0; c < l.c; ++c) rm[c] = (1 - p.momentum) * rm[c] + p.momentum * mean[c];
      scatter_dense(*running_mean, rm.data());
    }
    if (running_var) {
      std::vector<double> rv = dense_copy<double>(*running_var);
      for (int64_t c = 0; c < l.c; ++c) rv[c] = (1 - p.momentum) * rv[c] + p.momentum * var[c] * unbias;
      scatter_dense(*running_var, rv.data());
    }
  } else {
    mean = dense_copy<double>(*running_mean);
    var = dense_copy<double>(*running_var);
  }
  std::vector<double> invstd(l.c);
  for (int64_t c = 0; c < l.c; ++c) invstd[c] = 1.0 / std::sqrt(var[c] + p.eps);
  scatter_dense(save_mean, mean.data());
  scatter_dense(save_invstd, invstd.data());

  // out = (x - mean) * scale + bias, the affine weight folded into scale.
  // The element loops run in T (float for float32): statistics need double
  // sums, one multiply-add per element does not, and float is twice the
  // vector lanes. Subtracting the mean first keeps large-mean inputs exact.
  const std::vector<double> w = values_or(weight, l.c, 1.0), b = values_or(bias, l.c, 0.0);
  DenseOut<T> out(out_view);
#pragma omp parallel for schedule(static) if (l.n * l.c * l.s > kParallelNormElems)
  for (int64_t row = 0; row < l.n * l.c; ++row) {
    const int64_t c = row % l.c;
    const T* src = x.get() + row * l.s;
    T* dst = out.get() + row * l.s;
    const T m = static_cast<T>(mean[c]), sc = static_cast<T>(invstd[c] * w[c]), sh = static_cast<T>(b[c]);
#pragma omp simd
    for (int64_t j = 0; j < l.s; ++j) dst[j] = (src[j] - m) * sc + sh;
  }
  out.commit();
}

template <typename T>
void batch_norm_backward_typed(const View& grad_in_view, const View* grad_weight, const View* grad_bias,
                               const View& grad_out_view, const View& in_view, const View* weight,
                               const View& save_mean, const View& save_invstd, const BatchNormParams& p) {
  const ChannelLayout l = channel_layout("batch_norm_backward", in_view.shape);
  const DenseIn<T> x(in_view), g(grad_out_view);
  const std::vector<double> mean = dense_copy<double>(save_mean), invstd = dense_copy<double>(save_invstd);
  const std::vector<double> w = values_or(weight, l.c, 1.0);
  std::vector<double> sum_g(l.c), sum_g_xhat(l.c);
#pragma omp parallel for schedule(static) if (l.n * l.c * l.s > kParallelNormElems)
  for (int64_t c = 0; c < l.c; ++c) {
    double sg = 0, sgx = 0;
    const double mc = mean[c];
    for (int64_t i = 0; i < l.n; ++i) {
      const T* xp = x.get() + (i * l.c + c) * l.s;
      const T* gp = g.get() + (i * l.c + c) * l.s;
#pragma omp simd reduction(+ : sg, sgx)
      for (int64_t j = 0; j < l.s; ++j) {
        sg += gp[j];
        sgx += gp[j] * (xp[j] - mc);
      }
    }
    sum_g[c] = sg;
    sum_g_xhat[c] = sgx * invstd[c];
  }
  if (grad_weight) scatter_dense(*grad_weight, sum_g_xhat.data());
  if (grad_bias) scatter_dense(*grad_bias, sum_g.data());
  if (!grad_in_view.data) return;

  // The element loop runs in T, as in the forward pass.
  const double count = static_cast<double>(std::max<int64_t>(l.count(), 1));
  DenseOut<T> grad_in(grad_in_view);
#pragma omp parallel for schedule(static) if (l.n * l.c * l.s > kParallelNormElems)
  for (int64_t row = 0; row < l.n * l.c; ++row) {
    const int64_t c = row % l.c;
    const T* xp = x.get() + row * l.s;
    const T* gp = g.get() + row * l.s;
    T* dst = grad_in.get() + row * l.s;
    const double k = invstd[c] * w[c];
    if (p.training) {
      // d/dx of w * (x - mean) * invstd with mean and invstd depending on x:
      // k * (g - mean(g) - xhat * mean(g * xhat)), xhat = (x - mean) * invstd.
      const T kt = static_cast<T>(k), shift = static_cast<T>(-k * sum_g[c] / count);
      const T slope = static_cast<T>(-k * invstd[c] * sum_g_xhat[c] / count), mc = static_cast<T>(mean[c]);
#pragma omp simd
      for (int64_t j = 0; j < l.s; ++j) dst[j] = kt * gp[j] + shift + slope * (xp[j] - mc);
    } else {
      const T kt = static_cast<T>(k);
#pragma omp simd
      for (int64_t j = 0; j < l.s; ++j) dst[j] = kt * gp[j];
    }
  }
  grad_in.commit();
}

// --- layer norm ---

std::vector<float> floats_or_empty(const View* v) { return v ? dense_copy<float>(*v) : std::vector<float>{}; }
const float* data_or_null(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }

void layer_norm_vector(const View& out_view, const View& mean_view, const View& rstd_view, const View& in_view,
                       const View* weight, const View* bias, double eps, const RowLayout& l) {
  const DenseIn<float> x(in_view);
  const std::vector<float> w = floats_or_empty(weight), b = floats_or_empty(bias);
  // The row statistics in scratch from the backend's cache: std::vectors of
  // them (4 MiB for 16M floats in rows of 64) were zeroed and faulted in on
  // every call.
  const Scratch<double> mean(dense_copy_memory(), l.rows), rstd(dense_copy_memory(), l.rows);
  DenseOut<float> out(out_view);
  const bool stream = !out.staged() && out.get() != x.get() && vec::stream_rows(l.rows * l.cols, l.cols);
  parallel_for(l.rows, l.rows * l.cols * kNormCostPerElement, [&](int64_t begin, int64_t end) {
    vec::layer_norm_rows(out.get() + begin * l.cols, x.get() + begin * l.cols, end - begin, l.cols, data_or_null(w),
                         data_or_null(b), eps, mean.get() + begin, rstd.get() + begin, stream);
  });
  out.commit();
  scatter_dense(mean_view, mean.get());
  scatter_dense(rstd_view, rstd.get());
}

template <typename T>
void layer_norm_typed(const View& out_view, const View& mean_view, const View& rstd_view, const View& in_view,
                      const View* weight, const View* bias, double eps) {
  const RowLayout l = row_layout("layer_norm", in_view.shape);  // checked by kernel::LayerNorm
  if constexpr (std::is_same_v<T, float>) {
    if (vec::enabled() && l.cols > 0)
      return layer_norm_vector(out_view, mean_view, rstd_view, in_view, weight, bias, eps, l);
  }
  const DenseIn<T> x(in_view);
  const std::vector<double> w = values_or(weight, l.cols, 1.0), b = values_or(bias, l.cols, 0.0);
  const Scratch<double> mean_scratch(dense_copy_memory(), l.rows), rstd_scratch(dense_copy_memory(), l.rows);
  double* mean = mean_scratch.get();
  double* rstd = rstd_scratch.get();
  DenseOut<T> out(out_view);
#pragma omp parallel for schedule(static) if (l.rows * l.cols > kParallelNormElems)
  for (int64_t i = 0; i < l.rows; ++i) {
    const T* src = x.get() + i * l.cols;
    T* dst = out.get() + i * l.cols;
    double sum = 0;
    for (int64_t j = 0; j < l.cols; ++j) sum += src[j];
    const double m = l.cols > 0 ? sum / static_cast<double>(l.cols) : 0.0;
    double sq = 0;
    for (int64_t j = 0; j < l.cols; ++j) sq += (src[j] - m) * (src[j] - m);
    const double r = 1.0 / std::sqrt((l.cols > 0 ? sq / static_cast<double>(l.cols) : 0.0) + eps);
    for (int64_t j = 0; j < l.cols; ++j) dst[j] = static_cast<T>((src[j] - m) * r * w[j] + b[j]);
    mean[i] = m;
    rstd[i] = r;
  }
  out.commit();
  scatter_dense(mean_view, mean);
  scatter_dense(rstd_view, rstd);
}

// grad_weight[j] = sum_i g_ij * xhat_ij and grad_bias[j] = sum_i g_ij, split
// over column blocks so that each sum has one owner and a fixed order.
template <typename T>
void layer_norm_param_grads(const T* x, const T* g, const double* mean, const double* rstd, const RowLayout& l,
                            std::vector<double>& gw, std::vector<double>& gb) {
  gw.assign(l.cols, 0.0);
  gb.assign(l.cols, 0.0);
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (l.cols + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (l.rows * l.cols > kParallelNormElems)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t j0 = blk * kBlock, j1 = std::min(l.cols, j0 + kBlock);
    for (int64_t i = 0; i < l.rows; ++i) {
      const T* xr = x + i * l.cols;
      const T* gr = g + i * l.cols;
      for (int64_t j = j0; j < j1; ++j) {
        gw[j] += gr[j] * ((xr[j] - mean[i]) * rstd[i]);
        gb[j] += gr[j];
      }
    }
  }
}

template <typename T>
void layer_norm_backward_typed(const View& grad_in_view, const View* grad_weight, const View* grad_bias,
                               const View& grad_out_view, const View& in_view, const View& mean_view,
                               const View& rstd_view, const View* weight) {
  const RowLayout l = row_layout("layer_norm_backward", in_view.shape);
  const DenseIn<T> x(in_view), g(grad_out_view);
  const DenseIn<double> mean(mean_view), rstd(rstd_view);  // scratch from the backend's cache
  if (grad_weight || grad_bias) {
    std::vector<double> gw, gb;
    layer_norm_param_grads(x.get(), g.get(), mean.get(), rstd.get(), l, gw, gb);
    if (grad_weight) scatter_dense(*grad_weight, gw.data());
    if (grad_bias) scatter_dense(*grad_bias, gb.data());
  }
  if (!grad_in_view.data) return;
  if constexpr (std::is_same_v<T, float>) {
    if (vec::enabled() && l.cols > 0) {
      const std::vector<float> wf = floats_or_empty(weight);
      DenseOut<float> grad_in(grad_in_view);
      const bool stream = !grad_in.staged() && grad_in.get() != g.get() && vec::stream_rows(l.rows * l.cols, l.cols);
      parallel_for(l.rows, l.rows * l.cols * kNormCostPerElement, [&](int64_t begin, int64_t end) {
        vec::layer_norm_backward_rows(grad_in.get() + begin * l.cols, g.get() + begin * l.cols,
                                      x.get() + begin * l.cols, end - begin, l.cols, data_or_null(wf),
                                      mean.get() + begin, rstd.get() + begin, stream);
      });
      grad_in.commit();
      return;
    }
  }
  const std::vector<double> w = values_or(weight, l.cols, 1.0);
  DenseOut<T> grad_in(grad_in_view);
#pragma omp parallel for schedule(static) if (l.rows * l.cols > kParallelNormElems)
  for (int64_t i = 0; i < l.rows; ++i) {
    const T* xr = x.get() + i * l.cols;
    const T* gr = g.get() + i * l.cols;
    T* dst = grad_in.get() + i * l.cols;
    double sum_gy = 0, sum_gy_xhat = 0;
    for (int64_t j = 0; j < l.cols; ++j) {
      const double gy = gr[j] * w[j];
      sum_gy += gy;
      sum_gy_xhat += gy * ((xr[j] - mean[i]) * rstd[i]);
    }
    const double n = static_cast<double>(std::max<int64_t>(l.cols, 1));
    const double mean_gy = sum_gy / n, mean_gy_xhat = sum_gy_xhat / n;
    for (int64_t j = 0; j < l.cols; ++j) {
      const double xhat = (xr[j] - mean[i]) * rstd[i];
      dst[j] = static_cast<T>(rstd[i] * (gr[j] * w[j] - mean_gy - xhat * mean_gy_xhat));
    }
  }
  grad_in.commit();
}

}  // namespace

void batch_norm(const View& out, const View& save_mean, const View& save_invstd, const View& in, const View* weight,
                const View* bias, const View* running_mean, const View* running_var, const BatchNormParams& p) {
  shapes::check_batch_norm(out, save_mean, save_invstd, in, weight, bias, running_mean, running_var, p.training);
  dispatch_floating("batch_norm", in.dtype, [&](auto tag) {
    batch_norm_typed<decltype(tag)>(out, save_mean, save_invstd, in, weight, bias, running_mean, running_var, p);
  });
}

void batch_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                         const View& in, const View* weight, const View& save_mean, const View& save_invstd,
                         const BatchNormParams& p) {
  shapes::check_batch_norm_backward(grad_in, grad_weight, grad_bias, grad_out, in, weight, save_mean, save_invstd);
  dispatch_floating("batch_norm_backward", in.dtype, [&](auto tag) {
    batch_norm_backward_typed<decltype(tag)>(grad_in, grad_weight, grad_bias, grad_out, in, weight, save_mean,
                                             save_invstd, p);
  });
}

void layer_norm(const View& out, const View& mean, const View& rstd, const View& in, const View* weight,
                const View* bias, double eps) {
  shapes::check_layer_norm(out, mean, rstd, in, weight, bias);
  dispatch_floating("layer_norm", in.dtype,
                    [&](auto tag) { layer_norm_typed<decltype(tag)>(out, mean, rstd, in, weight, bias, eps); });
}

void layer_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                         const View& in, const View& mean, const View& rstd, const View* weight) {
  shapes::check_layer_norm_backward(grad_in, grad_weight, grad_bias, grad_out, in, mean, rstd, weight);
  dispatch_floating("layer_norm_backward", in.dtype, [&](auto tag) {
    layer_norm_backward_typed<decltype(tag)>(grad_in, grad_weight, grad_bias, grad_out, in, mean, rstd, weight);
  });
}

ANVIL_REGISTER_KERNEL(kernel::BatchNorm, CPU, batch_norm);
ANVIL_REGISTER_KERNEL(kernel::BatchNormBackward, CPU, batch_norm_backward);
ANVIL_REGISTER_KERNEL(kernel::LayerNorm, CPU, layer_norm);
ANVIL_REGISTER_KERNEL(kernel::LayerNormBackward, CPU, layer_norm_backward);

}  // namespace anvil::cpu
