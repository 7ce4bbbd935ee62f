// RMS norm over the last dim of [rows, cols], forward and backward: one warp
// per row, two strided passes (sums, then the output) so any row length
// works; the second pass re-reads the row from L1/L2. Math in acc_t (float,
// double for float64); rstd saved as float32 per row.
//
// The backward recomputes each row's r = 1/sqrt(mean(x^2) + eps) exactly as
// the forward did (float64 stays exact), sums g w x in the same pass, and
// writes grad_in = r g w - x (r^3 mean(g w x)). grad_weight = sum over rows
// of g x r: r per row goes to a scratch array, then blocks of 32 columns x 8
// row lanes sum chunks of rows into partial sums that a last kernel adds in
// a fixed order (deterministic, no atomics; device/column_chunks.cuh).
#include <cuda_runtime_api.h>

#include <algorithm>
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

constexpr int kRmsRowsPerBlock = 4;

template <typename T>
__global__ void rms_norm_warp_kernel(T* y, const T* x, const acc_t<T>* w, float* rstd, int64_t rows, int64_t cols,
                                     acc_t<T> eps) {
  using C = acc_t<T>;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // uniform over the warp
  const int lane = static_cast<int>(threadIdx.x & 31);
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  C sq = 0;
  for (int64_t i = lane; i < cols; i += 32) {
    const C v = dev::cast<C>(xr[i]);
    sq += v * v;
  }
  sq = dev::warp_reduce_sum(sq);
  const C r = C(1) / sqrt(sq / static_cast<C>(cols) + eps);
  for (int64_t i = lane; i < cols; i += 32) {
    const C v = dev::cast<C>(xr[i]) * r;
    yr[i] = dev::cast<T>(w ? v * w[i] : v);
  }
  if (lane == 0) rstd[row] = static_cast<float>(r);
}

template <typename T>
__global__ void rms_norm_backward_warp_kernel(T* gi, acc_t<T>* row_rstd, const T* g, const T* x, const acc_t<T>* w,
                                              int64_t rows, int64_t cols, acc_t<T> eps) {
  using C = acc_t<T>;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // uniform over the warp
  const int lane = static_cast<int>(threadIdx.x & 31);
  const T* xr = x + row * cols;
  const T* gr = g + row * cols;
  C sq = 0, dot = 0;
  for (int64_t i = lane; i < cols; i += 32) {
    const C v = dev::cast<C>(xr[i]);
    const C gw = w ? dev::cast<C>(gr[i]) * w[i] : dev::cast<C>(gr[i]);
    sq += v * v;
    dot += gw * v;
  }
  sq = dev::warp_reduce_sum(sq);
  dot = dev::warp_reduce_sum(dot);
  const C n = static_cast<C>(cols);
  const C r = C(1) / sqrt(sq / n + eps);
  if (lane == 0 && row_rstd) row_rstd[row] = r;
  if (!gi) return;
  const C c = r * r * r * dot / n;
  T* gir = gi + row * cols;
  for (int64_t i = lane; i < cols; i += 32) {
    const C gw = w ? dev::cast<C>(gr[i]) * w[i] : dev::cast<C>(gr[i]);
    gir[i] = dev::cast<T>(r * gw - dev::cast<C>(xr[i]) * c);
  }
}

// partial[chunk, col] = sum over the chunk's rows of g * x * r.
template <typename T>
__global__ void rms_norm_weight_grad_partial_kernel(dev::ColumnChunkSums<acc_t<T>, 1> sums, const T* g, const T* x,
                                                    const acc_t<T>* row_rstd, int64_t rows, int64_t cols,
                                                    int64_t rows_per_chunk) {
  using C = acc_t<T>;
  dev::sum_column_chunk(sums, rows, cols, rows_per_chunk, [&](int64_t r, int64_t col, C(&acc)[1]) {
    acc[0] += dev::cast<C>(g[r * cols + col]) * dev::cast<C>(x[r * cols + col]) * row_rstd[r];
  });
}

unsigned row_grid(int64_t rows) {
  const int64_t blocks = ceil_div(rows, kRmsRowsPerBlock);
  ANVIL_CHECK(blocks < (int64_t(1) << 31), "rms_norm: too many rows for one launch: ", rows);
  return static_cast<unsigned>(blocks);
}

}  // namespace

void rms_norm_backward(const View& grad_in, const View* grad_weight, const View& grad_out, const View& in,
                       const View* weight, double eps) {
  ANVIL_NVTX_RANGE("rms_norm_backward");
  const shapes::RowLayout l = shapes::check_rms_norm_backward(grad_in, grad_weight, grad_out, in, weight);
  DeviceGuard guard(in.device_index);
  const cudaStream_t s = stream(in.device_index);
  visit_floating_device_dtype("rms_norm_backward", in.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    const DType acc_dtype = sizeof(C) == 8 ? kFloat64 : kFloat32;
    std::optional<DenseArg> gw;
    if (grad_weight) gw.emplace(cuda_runtime(), *grad_weight, acc_dtype, DenseArg::Out);
    if (l.rows == 0 || l.cols == 0) {  // no rows: a zero weight gradient; no columns: nothing to write
      if (gw) fill(gw->view(), Scalar(0.0));
      if (gw) gw->commit();
      return;
    }
    DenseArg x(cuda_runtime(), in, in.dtype, DenseArg::In), g(cuda_runtime(), grad_out, in.dtype, DenseArg::In);
    std::optional<DenseArg> gi, w;
    if (grad_in.data) gi.emplace(cuda_runtime(), grad_in, in.dtype, DenseArg::Out);
    if (weight) w.emplace(cuda_runtime(), *weight, acc_dtype, DenseArg::In);
    std::optional<Scratch> row_rstd;
    if (gw) row_rstd.emplace(cuda_runtime(), in.device_index, l.rows * sizeof(C));
    launch_kernel(rms_norm_backward_warp_kernel<T>, row_grid(l.rows), 32 * kRmsRowsPerBlock, 0, s)(
        gi ? gi->ptr<T>() : nullptr, row_rstd ? row_rstd->as<C>() : nullptr, g.ptr<T>(), x.ptr<T>(),
        w ? w->ptr<C>() : nullptr, l.rows, l.cols, C(eps));
    ANVIL_CUDA_CHECK_LAUNCH("rms_norm_backward_warp_kernel");
    if (gi) gi->commit();
    if (!gw) return;
    const dev::RowChunks rc = dev::row_chunks(l.rows);
    Scratch partial(cuda_runtime(), in.device_index, rc.chunks * l.cols * sizeof(C));
    const dev::ColumnChunkSums<C, 1> sums{{partial.as<C>()}, {gw->ptr<C>()}};
    const dim3 grid(static_cast<unsigned>(ceil_div(l.cols, dev::kColTile)), static_cast<unsigned>(rc.chunks));
    launch_kernel(rms_norm_weight_grad_partial_kernel<T>, grid, dim3(dev::kColTile, dev::kRowLanes), 0, s)(
        sums, g.ptr<T>(), x.ptr<T>(), row_rstd->as<C>(), l.rows, l.cols, rc.rows_per_chunk);
    ANVIL_CUDA_CHECK_LAUNCH("rms_norm_weight_grad_partial_kernel");
    launch_kernel(dev::sum_column_chunks_kernel<C, 1>, capped_blocks(l.cols, 256), 256, 0, s)(sums, rc.chunks, l.cols);
    ANVIL_CUDA_CHECK_LAUNCH("sum_column_chunks_kernel");
    gw->commit();
  });
}

void rms_norm(const View& out, const View& rstd, const View& in, const View* weight, double eps) {
  ANVIL_NVTX_RANGE("rms_norm");
  const shapes::RowLayout l = shapes::check_rms_norm(out, rstd, in, weight);
  if (l.rows == 0) return;
  DeviceGuard guard(in.device_index);
  const cudaStream_t s = stream(in.device_index);
  visit_floating_device_dtype("rms_norm", in.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    const DType acc_dtype = sizeof(C) == 8 ? kFloat64 : kFloat32;
    DenseArg x(cuda_runtime(), in, in.dtype, DenseArg::In), y(cuda_runtime(), out, in.dtype, DenseArg::Out);
    DenseArg r(cuda_runtime(), rstd, kFloat32, DenseArg::Out);
    std::optional<DenseArg> w;
    if (weight) w.emplace(cuda_runtime(), *weight, acc_dtype, DenseArg::In);
    if (l.cols == 0) {  // as the CPU: rstd 1/sqrt(eps), nothing to write in out
      fill(r.view(), Scalar(1.0 / std::sqrt(eps)));
    } else {
      launch_kernel(rms_norm_warp_kernel<T>, row_grid(l.rows), 32 * kRmsRowsPerBlock, 0, s)(
          y.ptr<T>(), x.ptr<T>(), w ? w->ptr<C>() : nullptr, r.ptr<float>(), l.rows, l.cols, C(eps));
      ANVIL_CUDA_CHECK_LAUNCH("rms_norm_warp_kernel");
    }
    y.commit();
    r.commit();
  });
}

ANVIL_REGISTER_KERNEL(kernel::RmsNorm, CUDA, rms_norm);
ANVIL_REGISTER_KERNEL(kernel::RmsNormBackward, CUDA, rms_norm_backward);

}  // namespace anvil::cuda
