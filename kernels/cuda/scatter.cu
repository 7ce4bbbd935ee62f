// scatter: overwrite or multiply along a dim (reduce Add is scatter_add, in
// indexing.cu). Overwrite takes one thread per index element, as PyTorch: with
// repeated indices any one of the writes wins. Multiply, and overwrite under
// use_deterministic_algorithms(true), let one thread own each position off the
// scattered dim and walk that dim serially, as the CPU does (the last index
// wins, products in index order), so no atomics are needed.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "core/base/determinism.h"
#include "core/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/index_kernels.h"
#include "kernels/cuda/device/kernel_kit.cuh"
#include "kernels/cuda/dtype_dispatch.h"
#include "kernels/cuda/grid.h"
#include "kernels/cuda/index_errors.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/strided_offsets.h"
#include "kernels/shapes/index_checks.h"

namespace anvil::cuda {
namespace {

using kit::IndexErrorRecord;
using shapes::at_least_1d;
using shapes::without_dim;

constexpr int kThreads = 256;

// Element e of index (walked by `offs`: out with the dim's stride 0, index, src).
template <typename T>
__global__ void scatter_overwrite_kernel(T* out, const int64_t* index, const T* src, dev::OffsetCalculator<3> offs,
                                         int64_t n, int64_t out_dim, int64_t out_step, IndexErrorRecord* rec, int dim) {
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[3];
    offs.offsets(e, off);
    const int64_t v = index[off[1]];
    if (v < 0 || v >= out_dim) {
      kit::record_index_error(rec, kit::kScatter, v, out_dim, dim);
      continue;
    }
    out[off[0] + v * out_step] = src[off[2]];
  }
}

// One thread per position off the scattered dim (walked by `offs` over the
// index's other dims), walking the dim in index order.
template <typename T, bool kMultiply>
__global__ void scatter_serial_kernel(T* out, const int64_t* index, const T* src, dev::OffsetCalculator<3> offs,
                                      int64_t n, int64_t len, int64_t out_step, int64_t index_step, int64_t src_step,
                                      int64_t out_dim, IndexErrorRecord* rec, int dim) {
  using C = dev::compute_t<T>;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t off[3];
    offs.offsets(e, off);
    for (int64_t k = 0; k < len; ++k) {
      const int64_t v = index[off[1] + k * index_step];
      if (v < 0 || v >= out_dim) {
        kit::record_index_error(rec, kit::kScatter, v, out_dim, dim);
        continue;
      }
      T* dst = out + off[0] + v * out_step;
      const T s = src[off[2] + k * src_step];
      if constexpr (kMultiply)
        *dst = dev::cast<T>(static_cast<C>(dev::cast<C>(*dst) * dev::cast<C>(s)));
      else
        *dst = s;
    }
  }
}

}  // namespace

// Reduce Add: indexing.cu's scatter_add, which accumulates with atomics.
void scatter_add(const View& out, int64_t dim, const View& index, const View& src);

void scatter(const View& out_, int64_t dim, const View& index_, const View& src_, ScatterReduce reduce) {
  if (reduce == ScatterReduce::Add) return scatter_add(out_, dim, index_, src_);
  ANVIL_NVTX_RANGE("scatter");
  const View out = at_least_1d(out_), index = at_least_1d(index_), src = at_least_1d(src_);
  dim = shapes::check_scatter("scatter", out, dim, index, src);
  const bool multiply = reduce == ScatterReduce::Multiply;
  ANVIL_CHECK(!(multiply && out.dtype == kBool), "scatter: reduce='multiply' is not supported for dtype bool");
  DeviceGuard guard(out.device_index);
  raise_pending_index_error(out.device_index);
  const int64_t n = index.numel();
  if (n == 0) return;
  const cudaStream_t s = stream(out.device_index);
  IndexErrorRecord* rec = index_error_record(out.device_index);
  const int d = static_cast<int>(dim);
  visit_device_dtype(out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (multiply || deterministic_algorithms_enabled()) {
      const View index_rest = without_dim(index, dim);
      Shape out_rest = out.strides, src_rest = src.strides;
      out_rest.erase(out_rest.begin() + dim);
      src_rest.erase(src_rest.begin() + dim);
      const auto offs =
          make_offset_calculator<3>("scatter", index_rest.shape, {&out_rest, &index_rest.strides, &src_rest});
      const int64_t rest = index_rest.numel();
      const auto kernel = multiply ? scatter_serial_kernel<T, true> : scatter_serial_kernel<T, false>;
      launch_kernel(kernel, capped_blocks(rest, kThreads), kThreads, 0, s)(
          static_cast<T*>(out.data), static_cast<const int64_t*>(index.data), static_cast<const T*>(src.data), offs,
          rest, index.shape[dim], out.strides[dim], index.strides[dim], src.strides[dim], out.shape[dim], rec, d);
      ANVIL_CUDA_CHECK_LAUNCH("scatter_serial_kernel");
      return;
    }
    Shape out_walk = out.strides;
    out_walk[dim] = 0;
    const auto offs = make_offset_calculator<3>("scatter", index.shape, {&out_walk, &index.strides, &src.strides});
    launch_kernel(scatter_overwrite_kernel<T>, capped_blocks(n, kThreads), kThreads, 0, s)(
        static_cast<T*>(out.data), static_cast<const int64_t*>(index.data), static_cast<const T*>(src.data), offs, n,
        out.shape[dim], out.strides[dim], rec, d);
    ANVIL_CUDA_CHECK_LAUNCH("scatter_overwrite_kernel");
  });
}

ANVIL_REGISTER_KERNEL(kernel::Scatter, CUDA, scatter);

}  // namespace anvil::cuda
