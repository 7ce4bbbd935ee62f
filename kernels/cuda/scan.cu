// Scans along one dim (kernels/ops/scan_ops.h: cumsum, cumprod,
// logcumsumexp), in acc_t (float for float and the 16-bit floats, double,
// int64 for integers). The input and output are contiguous (anything else is
// gathered into scratch and scattered back), seen as [outer, n, inner]:
// - inner == 1 (the scan dim is the last): one block per row, the row taken
//   in chunks of blockDim elements; each chunk is scanned in parallel in
//   shared memory (Hillis-Steele: log2(blockDim) steps), offset by the carry
//   of the chunks before it, whose total becomes the next carry;
// - inner > 1: one thread per (outer, inner) column, each scanning its column
//   in order; neighbouring threads read neighbouring addresses at every step,
//   so the reads are coalesced without any shared memory.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/cuda/device/dtype.cuh"
#include "kernels/cuda/device/dynamic_shared.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/ops/scan_ops.h"

namespace anvil::cuda {
namespace {

constexpr int kMaxRowThreads = 256;
constexpr int kColumnThreads = 256;

template <typename T, ScanOp Op> __global__ void scan_row_kernel(T* out, const T* in, int64_t rows, int64_t n) {
  using A = dev::acc_t<T>;
  using S = ops::Scan<Op, A>;
  A* chunk = dev::dynamic_shared<A>();  // blockDim.x values
  const int t = threadIdx.x;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * n;
    T* y = out + row * n;
    A carry = S::identity();
    for (int64_t start = 0; start < n; start += blockDim.x) {
      const int64_t i = start + t;
      A v = i < n ? dev::cast<A>(x[i]) : S::identity();
      chunk[t] = v;
      __syncthreads();
      for (int step = 1; step < static_cast<int>(blockDim.x); step <<= 1) {
        const A before = t >= step ? chunk[t - step] : S::identity();
        __syncthreads();  // every read of this step before any write
        if (t >= step) {
          v = S::combine(before, v);
          chunk[t] = v;
        }
        __syncthreads();
      }
      if (i < n) y[i] = dev::cast<T>(S::combine(carry, v));
      carry = S::combine(carry, chunk[blockDim.x - 1]);
      __syncthreads();  // the chunk's total is read before the next chunk overwrites it
    }
  }
}

template <typename T, ScanOp Op>
__global__ void scan_column_kernel(T* out, const T* in, int64_t outer, int64_t n, int64_t inner) {
  using A = dev::acc_t<T>;
  using S = ops::Scan<Op, A>;
  const int64_t columns = outer * inner;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < columns;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, k = c - o * inner;
    const T* x = in + o * n * inner + k;
    T* y = out + o * n * inner + k;
    A acc = S::identity();
    for (int64_t i = 0; i < n; ++i) {
      acc = S::combine(acc, dev::cast<A>(x[i * inner]));
      y[i * inner] = dev::cast<T>(acc);
    }
  }
}

// The smallest power of two >= n, between 32 and kMaxRowThreads: short rows
// do not idle a whole block.
int row_threads(int64_t n) {
  int t = 32;
  while (t < kMaxRowThreads && t < n) t <<= 1;
  return t;
}

template <typename T, ScanOp Op>
void launch_scan(cudaStream_t s, T* y, const T* x, int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) {
    const int threads = row_threads(n);
    launch_kernel(scan_row_kernel<T, Op>, capped_blocks(outer, 1, kMaxRowBlocks), threads,
                  threads * sizeof(dev::acc_t<T>), s)(y, x, outer, n);
    ANVIL_CUDA_CHECK_LAUNCH("scan_row_kernel");
  } else {
    launch_kernel(scan_column_kernel<T, Op>, capped_blocks(outer * inner, kColumnThreads), kColumnThreads, 0, s)(
        y, x, outer, n, inner);
    ANVIL_CUDA_CHECK_LAUNCH("scan_column_kernel");
  }
}

}  // namespace

void scan(ScanOp op, const View& out, const View& in, int64_t dim) {
  const char* name = ops::scan_name(op);
  ANVIL_NVTX_RANGE(name);
  ANVIL_CHECK(out.shape == in.shape && out.dtype == in.dtype, name, ": output ", out.dtype, out.shape,
              " should match input ", in.dtype, in.shape);
  ANVIL_CHECK(in.dim() == 0 ? (dim == 0 || dim == -1) : (dim >= 0 && dim < in.dim()), name, ": dim ", dim,
              " out of range for shape ", in.shape);
  ANVIL_CHECK(op != ScanOp::LogSumExp || is_floating(in.dtype), name, ": not supported for dtype ", in.dtype,
              " (floating dtypes only)");
  if (in.numel() == 0) return;
  int64_t outer = 1, n = 1, inner = 1;
  if (in.dim() > 0) {
    n = in.shape[dim];
    for (int64_t d = 0; d < dim; ++d) outer *= in.shape[d];
    for (int64_t d = dim + 1; d < in.dim(); ++d) inner *= in.shape[d];
  }
  DeviceGuard guard(in.device_index);
  const cudaStream_t s = stream(in.device_index);
  DenseArg x(cuda_runtime(), in, in.dtype, DenseArg::In), y(cuda_runtime(), out, out.dtype, DenseArg::Out);
  visit_device_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case ScanOp::Sum:
        return launch_scan<T, ScanOp::Sum>(s, y.ptr<T>(), x.ptr<T>(), outer, n, inner);
      case ScanOp::Prod:
        return launch_scan<T, ScanOp::Prod>(s, y.ptr<T>(), x.ptr<T>(), outer, n, inner);
      case ScanOp::LogSumExp:
        if constexpr (dev::is_floating_v<T>)
          launch_scan<T, ScanOp::LogSumExp>(s, y.ptr<T>(), x.ptr<T>(), outer, n, inner);
        return;
    }
  });
  y.commit();
}

ANVIL_REGISTER_KERNEL(kernel::Scan, CUDA, scan);

}  // namespace anvil::cuda
