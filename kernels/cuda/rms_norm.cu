// RMS norm over the last dim of [rows, cols]: one warp per row, two strided
// passes (sum of squares, then scale) so any row length works; the second
// pass re-reads the row from L1/L2. Math in acc_t (float, double for
// float64); rstd saved as float32 per row. Gradient: composed in core.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <optional>

#include "core/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device/kernel_kit.cuh"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/grid.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/scratch.h"
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

}  // namespace

void CudaBackend::rms_norm(const View& out, const View& rstd, const View& in, const View* weight, double eps) {
  ANVIL_NVTX_RANGE("rms_norm");
  const shapes::RowLayout l = shapes::check_rms_norm(out, rstd, in, weight);
  if (l.rows == 0) return;
  DeviceGuard guard(in.device_index);
  const cudaStream_t s = stream(in.device_index);
  visit_floating_device_dtype("rms_norm", in.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    const DType acc_dtype = sizeof(C) == 8 ? kFloat64 : kFloat32;
    DenseArg x(*this, in, in.dtype, DenseArg::In), y(*this, out, in.dtype, DenseArg::Out);
    DenseArg r(*this, rstd, kFloat32, DenseArg::Out);
    std::optional<DenseArg> w;
    if (weight) w.emplace(*this, *weight, acc_dtype, DenseArg::In);
    if (l.cols == 0) {  // as the CPU: rstd 1/sqrt(eps), nothing to write in out
      fill(r.view(), Scalar(1.0 / std::sqrt(eps)));
    } else {
      const int64_t blocks = ceil_div(l.rows, kRmsRowsPerBlock);
      ANVIL_CHECK(blocks < (int64_t(1) << 31), "rms_norm: too many rows for one launch: ", l.rows);
      launch_kernel(rms_norm_warp_kernel<T>, static_cast<unsigned>(blocks), 32 * kRmsRowsPerBlock, 0, s)(
          y.ptr<T>(), x.ptr<T>(), w ? w->ptr<C>() : nullptr, r.ptr<float>(), l.rows, l.cols, C(eps));
      ANVIL_CUDA_CHECK_LAUNCH("rms_norm_warp_kernel");
    }
    y.commit();
    r.commit();
  });
}

}  // namespace anvil::cuda
