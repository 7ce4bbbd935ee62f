// Layer norm over the last dim of [rows, cols], forward and backward (the
// formulas of kernels/cpu/norm.cpp; math in float, double for float64; mean
// and rstd are saved as float32 per row).
//
// Rows of up to 1024 columns: one warp per row with the row in registers.
// Longer rows: one block of 512 threads per row, the row in registers up to
// 8192 columns, else re-read from global memory (L2 keeps it). Mean and
// variance are two-pass (mean first, then the squared deviations) like the CPU,
// which avoids the cancellation of E[x^2] - E[x]^2.
//
// grad_weight and grad_bias are column sums over all rows, done in two fixed
// stages so they are deterministic: blocks of 32 columns x a chunk of rows
// write per-chunk partial sums, then one thread per column adds the chunks in
// order. No atomics.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <optional>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/norm_kernels.h"
#include "kernels/cuda/device/column_chunks.cuh"
#include "kernels/cuda/device/kernel_kit.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/shapes/layouts.h"

namespace anvil::cuda {
namespace {

using kit::acc_t;

constexpr int kWarpRowsPerBlock = 4;
constexpr int kRowThreads = 512;
// Rows up to this long go one warp per row, the row in registers (at most 32
// values per lane); longer rows get a block each.
constexpr int64_t kWarpRowMaxLength = 32 * 32;

// Sum over the row's threads: the warp for the warp kernels, the block otherwise.
template <bool kWarp, typename C> __device__ __forceinline__ C row_sum(C v) {
  if constexpr (kWarp)
    return dev::warp_reduce_sum(v);
  else
    return dev::block_reduce_sum(v);
}

// Forward over one row held by `threads` threads starting at `first`
// (lane or threadIdx.x), kPer values each (kPer == 0: not kept in registers).
// With kAdd the row is x + res, rounded to T and written to sum_out first
// (the fused residual add); the norm is then of that rounded sum.
template <typename T, typename C, int kPer, bool kWarp, bool kAdd = false>
__device__ __forceinline__ void layer_norm_row(T* y, const T* x, int64_t cols, int first, int threads, const C* w,
                                               const C* b, C eps, float* mean_out, float* rstd_out,
                                               const T* res = nullptr, T* sum_out = nullptr) {
  C v[kPer > 0 ? kPer : 1];
  C sum = 0;
  if constexpr (kPer > 0) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t i = first + static_cast<int64_t>(j) * threads;
      if constexpr (kAdd) {
        if (i < cols) {
          const T s = dev::cast<T>(dev::cast<C>(x[i]) + dev::cast<C>(res[i]));
          sum_out[i] = s;
          v[j] = dev::cast<C>(s);
        } else {
          v[j] = C(0);
        }
      } else {
        v[j] = i < cols ? dev::cast<C>(x[i]) : C(0);
      }
      sum += v[j];
    }
  } else {
    if constexpr (kAdd) {
      for (int64_t i = first; i < cols; i += threads) {
        const T s = dev::cast<T>(dev::cast<C>(x[i]) + dev::cast<C>(res[i]));
        sum_out[i] = s;
        sum += dev::cast<C>(s);
      }
      x = sum_out;  // later passes re-read this thread's own sums
    } else {
      for (int64_t i = first; i < cols; i += threads) sum += dev::cast<C>(x[i]);
    }
  }
  const C m = row_sum<kWarp>(sum) / static_cast<C>(cols);
  C sq = 0;
  if constexpr (kPer > 0) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t i = first + static_cast<int64_t>(j) * threads;
      if (i < cols) sq += (v[j] - m) * (v[j] - m);
    }
  } else {
    for (int64_t i = first; i < cols; i += threads) {
      const C d = dev::cast<C>(x[i]) - m;
      sq += d * d;
    }
  }
  const C r = C(1) / sqrt(row_sum<kWarp>(sq) / static_cast<C>(cols) + eps);
  if constexpr (kPer > 0) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t i = first + static_cast<int64_t>(j) * threads;
      if (i < cols) y[i] = dev::cast<T>((v[j] - m) * r * (w ? w[i] : C(1)) + (b ? b[i] : C(0)));
    }
  } else {
    for (int64_t i = first; i < cols; i += threads)
      y[i] = dev::cast<T>((dev::cast<C>(x[i]) - m) * r * (w ? w[i] : C(1)) + (b ? b[i] : C(0)));
  }
  if (first == 0) {
    *mean_out = static_cast<float>(m);
    *rstd_out = static_cast<float>(r);
  }
}

template <typename T, int kPer>
__global__ void add_layer_norm_warp_kernel(T* y, T* sum_out, const T* x, const T* res, const acc_t<T>* w,
                                           const acc_t<T>* b, float* mean, float* rstd, int64_t rows, int64_t cols,
                                           acc_t<T> eps) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t o = row * cols;
  layer_norm_row<T, acc_t<T>, kPer, true, true>(y + o, x + o, cols, threadIdx.x & 31, 32, w, b, eps, mean + row,
                                                rstd + row, res + o, sum_out + o);
}

template <typename T, int kPer>
__global__ void __launch_bounds__(kRowThreads)
    add_layer_norm_block_kernel(T* y, T* sum_out, const T* x, const T* res, const acc_t<T>* w, const acc_t<T>* b,
                                float* mean, float* rstd, int64_t rows, int64_t cols, acc_t<T> eps) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t o = row * cols;
    layer_norm_row<T, acc_t<T>, kPer, false, true>(y + o, x + o, cols, threadIdx.x, blockDim.x, w, b, eps, mean + row,
                                                   rstd + row, res + o, sum_out + o);
  }
}

template <typename T, int kPer>
__global__ void layer_norm_warp_kernel(T* y, const T* x, const acc_t<T>* w, const acc_t<T>* b, float* mean, float* rstd,
                                       int64_t rows, int64_t cols, acc_t<T> eps) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // uniform over the warp
  layer_norm_row<T, acc_t<T>, kPer, true>(y + row * cols, x + row * cols, cols, threadIdx.x & 31, 32, w, b, eps,
                                          mean + row, rstd + row);
}

template <typename T, int kPer>
__global__ void __launch_bounds__(kRowThreads)
    layer_norm_block_kernel(T* y, const T* x, const acc_t<T>* w, const acc_t<T>* b, float* mean, float* rstd,
                            int64_t rows, int64_t cols, acc_t<T> eps) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x)
    layer_norm_row<T, acc_t<T>, kPer, false>(y + row * cols, x + row * cols, cols, threadIdx.x, blockDim.x, w, b, eps,
                                             mean + row, rstd + row);
}

// grad_in for one row: rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)).
template <typename T, typename C, int kPer, bool kWarp>
__device__ __forceinline__ void layer_norm_backward_row(T* gi, const T* g, const T* x, int64_t cols, int first,
                                                        int threads, const C* w, C m, C r) {
  C gy[kPer > 0 ? kPer : 1], xh[kPer > 0 ? kPer : 1];
  C s1 = 0, s2 = 0;
  if constexpr (kPer > 0) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t i = first + static_cast<int64_t>(j) * threads;
      gy[j] = i < cols ? dev::cast<C>(g[i]) * (w ? w[i] : C(1)) : C(0);
      xh[j] = i < cols ? (dev::cast<C>(x[i]) - m) * r : C(0);
      s1 += gy[j];
      s2 += gy[j] * xh[j];
    }
  } else {
    for (int64_t i = first; i < cols; i += threads) {
      const C a = dev::cast<C>(g[i]) * (w ? w[i] : C(1));
      s1 += a;
      s2 += a * ((dev::cast<C>(x[i]) - m) * r);
    }
  }
  const C n = static_cast<C>(cols);
  const C mean_gy = row_sum<kWarp>(s1) / n, mean_gy_xhat = row_sum<kWarp>(s2) / n;
  if constexpr (kPer > 0) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t i = first + static_cast<int64_t>(j) * threads;
      if (i < cols) gi[i] = dev::cast<T>(r * (gy[j] - mean_gy - xh[j] * mean_gy_xhat));
    }
  } else {
    for (int64_t i = first; i < cols; i += threads) {
      const C a = dev::cast<C>(g[i]) * (w ? w[i] : C(1));
      const C xhat = (dev::cast<C>(x[i]) - m) * r;
      gi[i] = dev::cast<T>(r * (a - mean_gy - xhat * mean_gy_xhat));
    }
  }
}

template <typename T, int kPer>
__global__ void layer_norm_backward_warp_kernel(T* gi, const T* g, const T* x, const acc_t<T>* w, const float* mean,
                                                const float* rstd, int64_t rows, int64_t cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t o = row * cols;
  layer_norm_backward_row<T, acc_t<T>, kPer, true>(gi + o, g + o, x + o, cols, threadIdx.x & 31, 32, w,
                                                   acc_t<T>(mean[row]), acc_t<T>(rstd[row]));
}

template <typename T, int kPer>
__global__ void __launch_bounds__(kRowThreads)
    layer_norm_backward_block_kernel(T* gi, const T* g, const T* x, const acc_t<T>* w, const float* mean,
                                     const float* rstd, int64_t rows, int64_t cols) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t o = row * cols;
    layer_norm_backward_row<T, acc_t<T>, kPer, false>(gi + o, g + o, x + o, cols, threadIdx.x, blockDim.x, w,
                                                      acc_t<T>(mean[row]), acc_t<T>(rstd[row]));
  }
}

// Stage 1 of grad_weight/grad_bias (device/column_chunks.cuh): partial sums
// of g * xhat and of g over a chunk of rows of 32 columns.
template <typename T>
__global__ void param_grads_partial_kernel(dev::ColumnChunkSums<acc_t<T>, 2> sums, const T* g, const T* x,
                                           const float* mean, const float* rstd, int64_t rows, int64_t cols,
                                           int64_t rows_per_chunk) {
  using C = acc_t<T>;
  dev::sum_column_chunk(sums, rows, cols, rows_per_chunk, [&](int64_t r, int64_t col, C(&acc)[2]) {
    const C gv = dev::cast<C>(g[r * cols + col]);
    acc[0] += gv * ((dev::cast<C>(x[r * cols + col]) - C(mean[r])) * C(rstd[r]));
    acc[1] += gv;
  });
}

template <typename F> void with_warp_per(int64_t n, F&& f) {
  if (n <= 32)
    f(std::integral_constant<int, 1>{});
  else if (n <= 64)
    f(std::integral_constant<int, 2>{});
  else if (n <= 128)
    f(std::integral_constant<int, 4>{});
  else if (n <= 256)
    f(std::integral_constant<int, 8>{});
  else if (n <= 512)
    f(std::integral_constant<int, 16>{});
  else
    f(std::integral_constant<int, 32>{});
}
template <typename F> void with_block_per(int64_t n, F&& f) {
  if (n <= 4 * kRowThreads)
    f(std::integral_constant<int, 4>{});
  else if (n <= 8 * kRowThreads)
    f(std::integral_constant<int, 8>{});
  else if (n <= 16 * kRowThreads)
    f(std::integral_constant<int, 16>{});
  else
    f(std::integral_constant<int, 0>{});
}

unsigned warp_row_grid(int64_t rows) {
  const int64_t blocks = ceil_div(rows, kWarpRowsPerBlock);
  ANVIL_CHECK(blocks < (int64_t(1) << 31), "layer_norm: too many rows for one launch: ", rows);
  return static_cast<unsigned>(blocks);
}

using shapes::row_layout;
using shapes::RowLayout;

}  // namespace

void layer_norm(const View& out, const View& mean, const View& rstd, const View& in, const View* weight,
                const View* bias, double eps) {
  ANVIL_NVTX_RANGE("layer_norm");
  const RowLayout l = shapes::check_layer_norm(out, mean, rstd, in, weight, bias);
  ANVIL_CHECK(out.dtype == in.dtype, "layer_norm: output dtype ", out.dtype, " differs from input dtype ", in.dtype);
  if (l.rows == 0) return;
  DeviceGuard guard(in.device_index);
  const cudaStream_t s = stream(in.device_index);
  visit_floating_device_dtype("layer_norm", in.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    const DType acc_dtype = sizeof(C) == 8 ? kFloat64 : kFloat32;
    DenseArg x(cuda_runtime(), in, in.dtype, DenseArg::In), y(cuda_runtime(), out, in.dtype, DenseArg::Out);
    DenseArg m(cuda_runtime(), mean, kFloat32, DenseArg::Out), r(cuda_runtime(), rstd, kFloat32, DenseArg::Out);
    std::optional<DenseArg> w, b;
    if (weight) w.emplace(cuda_runtime(), *weight, acc_dtype, DenseArg::In);
    if (bias) b.emplace(cuda_runtime(), *bias, acc_dtype, DenseArg::In);
    const C* wp = w ? w->ptr<C>() : nullptr;
    const C* bp = b ? b->ptr<C>() : nullptr;
    if (l.cols == 0) {  // as the CPU: mean 0, rstd 1/sqrt(eps), nothing to write in out
      fill(m.view(), Scalar(0.0));
      fill(r.view(), Scalar(1.0 / std::sqrt(eps)));
    } else if (l.cols <= kWarpRowMaxLength) {
      with_warp_per(l.cols, [&](auto per) {
        launch_kernel(layer_norm_warp_kernel<T, decltype(per)::value>, warp_row_grid(l.rows), 32 * kWarpRowsPerBlock, 0,
                      s)(y.ptr<T>(), x.ptr<T>(), wp, bp, m.ptr<float>(), r.ptr<float>(), l.rows, l.cols, C(eps));
      });
      ANVIL_CUDA_CHECK_LAUNCH("layer_norm_warp_kernel");
    } else {
      with_block_per(l.cols, [&](auto per) {
        launch_kernel(layer_norm_block_kernel<T, decltype(per)::value>, capped_blocks(l.rows, 1, kMaxRowBlocks),
                      kRowThreads, 0,
                      s)(y.ptr<T>(), x.ptr<T>(), wp, bp, m.ptr<float>(), r.ptr<float>(), l.rows, l.cols, C(eps));
      });
      ANVIL_CUDA_CHECK_LAUNCH("layer_norm_block_kernel");
    }
    y.commit();
    m.commit();
    r.commit();
  });
}

void layer_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                         const View& in, const View& mean, const View& rstd, const View* weight) {
  ANVIL_NVTX_RANGE("layer_norm_backward");
  const RowLayout l =
      shapes::check_layer_norm_backward(grad_in, grad_weight, grad_bias, grad_out, in, mean, rstd, weight);
  ANVIL_CHECK(grad_out.dtype == in.dtype && (!grad_in.data || grad_in.dtype == in.dtype),
              "layer_norm_backward: grad_out ", grad_out.dtype, " and grad_in ", grad_in.dtype,
              " must have the input's dtype ", in.dtype);
  DeviceGuard guard(in.device_index);
  const cudaStream_t s = stream(in.device_index);
  visit_floating_device_dtype("layer_norm_backward", in.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    const DType acc_dtype = sizeof(C) == 8 ? kFloat64 : kFloat32;
    DenseArg x(cuda_runtime(), in, in.dtype, DenseArg::In), g(cuda_runtime(), grad_out, in.dtype, DenseArg::In);
    DenseArg m(cuda_runtime(), mean, kFloat32, DenseArg::In), r(cuda_runtime(), rstd, kFloat32, DenseArg::In);

    if (grad_weight || grad_bias) {
      std::optional<DenseArg> gw, gb;
      if (grad_weight) gw.emplace(cuda_runtime(), *grad_weight, acc_dtype, DenseArg::Out);
      if (grad_bias) gb.emplace(cuda_runtime(), *grad_bias, acc_dtype, DenseArg::Out);
      if (l.cols > 0) {
        const dev::RowChunks rc = dev::row_chunks(l.rows);
        Scratch pw(cuda_runtime(), in.device_index, rc.chunks * l.cols * sizeof(C)),
            pb(cuda_runtime(), in.device_index, rc.chunks * l.cols * sizeof(C));
        const dev::ColumnChunkSums<C, 2> sums{{pw.as<C>(), pb.as<C>()},
                                              {gw ? gw->ptr<C>() : nullptr, gb ? gb->ptr<C>() : nullptr}};
        if (l.rows > 0) {
          const dim3 grid(static_cast<unsigned>(ceil_div(l.cols, dev::kColTile)), static_cast<unsigned>(rc.chunks));
          launch_kernel(param_grads_partial_kernel<T>, grid, dim3(dev::kColTile, dev::kRowLanes), 0, s)(
              sums, g.ptr<T>(), x.ptr<T>(), m.ptr<float>(), r.ptr<float>(), l.rows, l.cols, rc.rows_per_chunk);
          ANVIL_CUDA_CHECK_LAUNCH("param_grads_partial_kernel");
        } else {
          ANVIL_CUDA_CHECK(cudaMemsetAsync(pw.get(), 0, rc.chunks * l.cols * sizeof(C), s));
          ANVIL_CUDA_CHECK(cudaMemsetAsync(pb.get(), 0, rc.chunks * l.cols * sizeof(C), s));
        }
        launch_kernel(dev::sum_column_chunks_kernel<C, 2>, capped_blocks(l.cols, 256), 256, 0, s)(sums, rc.chunks,
                                                                                                  l.cols);
        ANVIL_CUDA_CHECK_LAUNCH("sum_column_chunks_kernel");
      }
      if (gw) gw->commit();
      if (gb) gb->commit();
    }
    if (!grad_in.data || l.rows == 0 || l.cols == 0) return;

    DenseArg gi(cuda_runtime(), grad_in, in.dtype, DenseArg::Out);
    std::optional<DenseArg> w;
    if (weight) w.emplace(cuda_runtime(), *weight, acc_dtype, DenseArg::In);
    const C* wp = w ? w->ptr<C>() : nullptr;
    if (l.cols <= kWarpRowMaxLength) {
      with_warp_per(l.cols, [&](auto per) {
        launch_kernel(layer_norm_backward_warp_kernel<T, decltype(per)::value>, warp_row_grid(l.rows),
                      32 * kWarpRowsPerBlock, 0,
                      s)(gi.ptr<T>(), g.ptr<T>(), x.ptr<T>(), wp, m.ptr<float>(), r.ptr<float>(), l.rows, l.cols);
      });
      ANVIL_CUDA_CHECK_LAUNCH("layer_norm_backward_warp_kernel");
    } else {
      with_block_per(l.cols, [&](auto per) {
        launch_kernel(layer_norm_backward_block_kernel<T, decltype(per)::value>,
                      capped_blocks(l.rows, 1, kMaxRowBlocks), kRowThreads, 0,
                      s)(gi.ptr<T>(), g.ptr<T>(), x.ptr<T>(), wp, m.ptr<float>(), r.ptr<float>(), l.rows, l.cols);
      });
      ANVIL_CUDA_CHECK_LAUNCH("layer_norm_backward_block_kernel");
    }
    gi.commit();
  });
}

void add_layer_norm(const View& out, const View& sum_out, const View& mean, const View& rstd, const View& x_in,
                    const View& residual, const View* weight, const View* bias, double eps) {
  ANVIL_NVTX_RANGE("add_layer_norm");
  ANVIL_CHECK(x_in.shape == residual.shape && sum_out.shape == x_in.shape && out.shape == x_in.shape,
              "add_layer_norm: shapes differ: x ", x_in.shape, ", residual ", residual.shape, ", sum ", sum_out.shape,
              ", out ", out.shape);
  ANVIL_CHECK(x_in.dtype == residual.dtype && sum_out.dtype == x_in.dtype && out.dtype == x_in.dtype,
              "add_layer_norm: dtypes differ: x ", x_in.dtype, ", residual ", residual.dtype, ", sum ", sum_out.dtype,
              ", out ", out.dtype);
  const RowLayout l = row_layout("add_layer_norm", x_in.shape);
  ANVIL_CHECK(mean.numel() == l.rows && rstd.numel() == l.rows, "add_layer_norm: mean and rstd must have ", l.rows,
              " elements, got ", mean.shape, " and ", rstd.shape);
  ANVIL_CHECK((!weight || weight->numel() == l.cols) && (!bias || bias->numel() == l.cols),
              "add_layer_norm: weight and bias must have ", l.cols, " elements");
  if (l.rows == 0) return;
  if (l.cols == 0) return layer_norm(out, mean, rstd, sum_out, weight, bias, eps);
  DeviceGuard guard(x_in.device_index);
  const cudaStream_t s = stream(x_in.device_index);
  visit_floating_device_dtype("add_layer_norm", x_in.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    const DType acc_dtype = sizeof(C) == 8 ? kFloat64 : kFloat32;
    DenseArg x(cuda_runtime(), x_in, x_in.dtype, DenseArg::In), r(cuda_runtime(), residual, x_in.dtype, DenseArg::In);
    DenseArg y(cuda_runtime(), out, x_in.dtype, DenseArg::Out), sm(cuda_runtime(), sum_out, x_in.dtype, DenseArg::Out);
    DenseArg m(cuda_runtime(), mean, kFloat32, DenseArg::Out), rs(cuda_runtime(), rstd, kFloat32, DenseArg::Out);
    std::optional<DenseArg> w, b;
    if (weight) w.emplace(cuda_runtime(), *weight, acc_dtype, DenseArg::In);
    if (bias) b.emplace(cuda_runtime(), *bias, acc_dtype, DenseArg::In);
    const C* wp = w ? w->ptr<C>() : nullptr;
    const C* bp = b ? b->ptr<C>() : nullptr;
    if (l.cols <= kWarpRowMaxLength) {
      with_warp_per(l.cols, [&](auto per) {
        launch_kernel(add_layer_norm_warp_kernel<T, decltype(per)::value>, warp_row_grid(l.rows),
                      32 * kWarpRowsPerBlock, 0, s)(y.ptr<T>(), sm.ptr<T>(), x.ptr<T>(), r.ptr<T>(), wp, bp,
                                                    m.ptr<float>(), rs.ptr<float>(), l.rows, l.cols, C(eps));
      });
      ANVIL_CUDA_CHECK_LAUNCH("add_layer_norm_warp_kernel");
    } else {
      with_block_per(l.cols, [&](auto per) {
        launch_kernel(add_layer_norm_block_kernel<T, decltype(per)::value>, capped_blocks(l.rows, 1, kMaxRowBlocks),
                      kRowThreads, 0, s)(y.ptr<T>(), sm.ptr<T>(), x.ptr<T>(), r.ptr<T>(), wp, bp, m.ptr<float>(),
                                         rs.ptr<float>(), l.rows, l.cols, C(eps));
      });
      ANVIL_CUDA_CHECK_LAUNCH("add_layer_norm_block_kernel");
    }
    y.commit();
    sm.commit();
    m.commit();
    rs.commit();
  });
}

ANVIL_REGISTER_KERNEL(kernel::LayerNorm, CUDA, layer_norm);
ANVIL_REGISTER_KERNEL(kernel::LayerNormBackward, CUDA, layer_norm_backward);
ANVIL_REGISTER_KERNEL(kernel::AddLayerNorm, CUDA, add_layer_norm);

}  // namespace anvil::cuda
