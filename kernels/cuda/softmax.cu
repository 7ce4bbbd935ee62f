// Softmax and log-softmax over any dim, forward and backward (the formulas of
// kernels/cpu/softmax.cpp; math in float, double for float64).
//
// Layouts, for contiguous input and output (anything else is gathered into
// contiguous scratch first and scattered back after):
// - softmax over the last dim, rows of n elements:
//     n <= 1024: one warp per row, the row held in registers (n / 32 values a
//                lane, 16-byte accesses when the rows allow, every load issued
//                before the first use: device/warp_row.cuh): one read and one
//                write of global memory;
//     n <= 8192: one block of 512 threads per row, the row in registers;
//     longer:    one block per row; a first pass keeps a running max and sum
//                of exp(x - max) (online softmax) and a second pass writes,
//                two reads and one write.
// - softmax over another dim, [outer, n, inner]: one thread per (outer, inner)
//   column, consecutive threads on consecutive inner positions so every step
//   along n is a coalesced read; online max and sum in the first pass.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/softmax_loss_kernels.h"
#include "kernels/cuda/device/kernel_kit.cuh"
#include "kernels/cuda/device/warp_row.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"

namespace anvil::cuda {
namespace {

using kit::acc_t;

constexpr int kWarpRowsPerBlock = 4;  // 128-thread blocks for the warp-per-row kernels
constexpr int kRowThreads = 512;  // block-per-row kernels
constexpr int kColumnThreads = 256;
// Rows up to this long go one warp per row, the row in registers (at most 32
// values per lane); longer rows get a block each.
constexpr int64_t kWarpRowMaxLength = 32 * 32;

template <typename C> __device__ __forceinline__ C neg_inf() { return -C(INFINITY); }

// Running max and sum of exp(x - max) over one thread's elements. A -inf
// element adds nothing (and never forms -inf - -inf); NaN propagates. A +inf
// element makes the sum NaN, as the CPU's exp(inf - inf) does (the whole row
// is then NaN there too); without that, a lone +inf would leave sum == 1.
template <typename C> struct Online {
  C max = neg_inf<C>(), sum = C(0);
  __device__ __forceinline__ void add(C x) {
    if (x > max) {
      sum = x == -neg_inf<C>() ? C(NAN) : sum * exp(max - x) + C(1);
      max = x;
    } else if (x != neg_inf<C>()) {
      sum += exp(x - max);  // NaN x (or max) makes the sum NaN
    }
  }
};

template <typename C> __device__ __forceinline__ dev::MaxSum<C> to_max_sum(const Online<C>& o) {
  return dev::MaxSum<C>{o.max, o.sum};
}

// y from x given the row's max and sum (of exp(x - max)).
template <bool kLog, typename C> __device__ __forceinline__ C softmax_value(C x, C mx, C sum, C log_sum, C inv) {
  if constexpr (kLog)
    return (x - mx) - log_sum;  // (x - max) - log(sum): large logits keep precision
  else
    return exp(x - mx) * inv;
}

// ---------------- forward ----------------

template <typename T, int kPer, int kVec, bool kLog>
__global__ void softmax_warp_kernel(T* out, const T* in, int64_t rows, int n) {
  using C = acc_t<T>;
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;  // uniform over the warp
  C v[kPer];
  dev::load_warp_row<kVec>(v, in + row * n, n, lane, neg_inf<C>());
  C mx = neg_inf<C>();
#pragma unroll
  for (int j = 0; j < kPer; ++j) mx = dev::nan_max(mx, v[j]);
  mx = dev::warp_reduce_max(mx);
  C sum = 0;
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    if (dev::row_slot<kVec>(lane, j) < n) {
      const C e = exp(v[j] - mx);
      sum += e;
      if constexpr (!kLog) v[j] = e;
    }
  }
  sum = dev::warp_reduce_sum(sum);
  const C log_sum = kLog ? log(sum) : C(0), inv = C(1) / sum;
  dev::store_warp_row<kVec, kPer>(out + row * n, n, lane,
                                  [&](int j) { return kLog ? (v[j] - mx) - log_sum : v[j] * inv; });
}

// One block per row; kPer > 0 keeps the row in registers (n <= kPer * blockDim.x).
template <typename T, int kPer, bool kLog>
__global__ void __launch_bounds__(kRowThreads) softmax_block_kernel(T* out, const T* in, int64_t rows, int64_t n) {
  using C = acc_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + row * n;
    T* y = out + row * n;
    if constexpr (kPer > 0) {
      C v[kPer];
      C mx = neg_inf<C>();
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int64_t i = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
        v[j] = i < n ? dev::cast<C>(x[i]) : neg_inf<C>();
        mx = dev::nan_max(mx, v[j]);
      }
      mx = dev::block_reduce_max(mx);
      C sum = 0;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int64_t i = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
        if (i < n) sum += exp(v[j] - mx);
      }
      sum = dev::block_reduce_sum(sum);
      const C log_sum = kLog ? log(sum) : C(0), inv = C(1) / sum;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const int64_t i = threadIdx.x + static_cast<int64_t>(j) * blockDim.x;
        if (i < n) y[i] = dev::cast<T>(softmax_value<kLog>(v[j], mx, sum, log_sum, inv));
      }
    } else {
      Online<C> o;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x) o.add(dev::cast<C>(x[i]));
      const dev::MaxSum<C> ms = dev::block_reduce_max_sum(to_max_sum(o));
      const C log_sum = kLog ? log(ms.sum) : C(0), inv = C(1) / ms.sum;
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        y[i] = dev::cast<T>(softmax_value<kLog>(dev::cast<C>(x[i]), ms.max, ms.sum, log_sum, inv));
    }
  }
}

template <typename T, bool kLog>
__global__ void softmax_inner_kernel(T* out, const T* in, int64_t outer, int64_t n, int64_t inner) {
  using C = acc_t<T>;
  const int64_t columns = outer * inner;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < columns;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, k = c - o * inner;
    const T* x = in + o * n * inner + k;
    T* y = out + o * n * inner + k;
    Online<C> s;
    for (int64_t i = 0; i < n; ++i) s.add(dev::cast<C>(x[i * inner]));
    // A NaN anywhere makes the sum NaN, and with it the whole column (as the CPU).
    const C log_sum = kLog ? log(s.sum) : C(0), inv = C(1) / s.sum;
    for (int64_t i = 0; i < n; ++i)
      y[i * inner] = dev::cast<T>(softmax_value<kLog>(dev::cast<C>(x[i * inner]), s.max, s.sum, log_sum, inv));
  }
}

// ---------------- backward ----------------
// softmax:     grad_in = y * (g - sum(g * y))
// log_softmax: grad_in = g - exp(y) * sum(g)

template <bool kLog, typename C> __device__ __forceinline__ C backward_term(C g, C y) { return kLog ? g : g * y; }
template <bool kLog, typename C> __device__ __forceinline__ C backward_value(C g, C y, C s) {
  return kLog ? g - exp(y) * s : y * (g - s);
}

template <typename T, int kPer, int kVec, bool kLog>
__global__ void softmax_backward_warp_kernel(T* gi, const T* go, const T* out, int64_t rows, int n) {
  using C = acc_t<T>;
  const int lane = threadIdx.x & 31;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row >= rows) return;
  const int64_t base = row * n;
  C g[kPer], y[kPer];
  dev::load_warp_row<kVec>(g, go + base, n, lane, C(0));
  dev::load_warp_row<kVec>(y, out + base, n, lane, C(0));
  C s = 0;
#pragma unroll
  for (int j = 0; j < kPer; ++j) s += backward_term<kLog>(g[j], y[j]);  // padding slots are 0: they add nothing
  s = dev::warp_reduce_sum(s);
  dev::store_warp_row<kVec, kPer>(gi + base, n, lane, [&](int j) { return backward_value<kLog>(g[j], y[j], s); });
}

template <typename T, bool kLog>
__global__ void __launch_bounds__(kRowThreads)
    softmax_backward_block_kernel(T* gi, const T* go, const T* out, int64_t rows, int64_t n) {
  using C = acc_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t base = row * n;
    C s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      s += backward_term<kLog>(dev::cast<C>(go[base + i]), dev::cast<C>(out[base + i]));
    s = dev::block_reduce_sum(s);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      gi[base + i] = dev::cast<T>(backward_value<kLog>(dev::cast<C>(go[base + i]), dev::cast<C>(out[base + i]), s));
  }
}

template <typename T, bool kLog>
__global__ void softmax_backward_inner_kernel(T* gi, const T* go, const T* out, int64_t outer, int64_t n,
                                              int64_t inner) {
  using C = acc_t<T>;
  const int64_t columns = outer * inner;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < columns;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = c / inner, k = c - o * inner;
    const int64_t base = o * n * inner + k;
    C s = 0;
    for (int64_t i = 0; i < n; ++i)
      s += backward_term<kLog>(dev::cast<C>(go[base + i * inner]), dev::cast<C>(out[base + i * inner]));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t at = base + i * inner;
      gi[at] = dev::cast<T>(backward_value<kLog>(dev::cast<C>(go[at]), dev::cast<C>(out[at]), s));
    }
  }
}

// ---------------- launchers ----------------

struct RowLayout {
  int64_t outer, n, inner;
};

// kPer for the warp kernels: registers per lane, a power of two with 32 * kPer >= n.
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

// Calls f(kPer, kVec) for a warp kernel over rows of n: 16-byte accesses when
// every lane's slots are whole vectors, n is a multiple of the vector and
// every row pointer is 16-byte aligned; one element per access otherwise.
template <typename T, typename F> void with_warp_layout(int64_t n, bool rows_aligned, F&& f) {
  constexpr int kVec = dev::vec_size_v<T>;
  with_warp_per(n, [&](auto per) {
    constexpr int kPer = decltype(per)::value;
    if constexpr (kPer % kVec == 0) {
      if (rows_aligned && n % kVec == 0) return f(per, std::integral_constant<int, kVec>{});
    }
    f(per, std::integral_constant<int, 1>{});
  });
}

bool aligned_16(std::initializer_list<const void*> pointers) {
  for (const void* p : pointers)
    if (!dev::vec_aligned(p, dev::kVecBytes)) return false;
  return true;
}

unsigned warp_row_grid(int64_t rows) {
  const int64_t blocks = ceil_div(rows, kWarpRowsPerBlock);
  ANVIL_CHECK(blocks < (int64_t(1) << 31), "softmax: too many rows for one launch: ", rows);
  return static_cast<unsigned>(blocks);
}

template <typename T, bool kLog> void launch_forward(cudaStream_t s, T* y, const T* x, const RowLayout& l) {
  const int64_t rows = l.outer * l.inner;
  if (l.inner != 1) {
    launch_kernel(softmax_inner_kernel<T, kLog>, capped_blocks(rows, kColumnThreads), kColumnThreads, 0, s)(
        y, x, l.outer, l.n, l.inner);
    ANVIL_CUDA_CHECK_LAUNCH("softmax_inner_kernel");
  } else if (l.n <= kWarpRowMaxLength) {
    with_warp_layout<T>(l.n, aligned_16({y, x}), [&](auto per, auto vec) {
      launch_kernel(softmax_warp_kernel<T, decltype(per)::value, decltype(vec)::value, kLog>, warp_row_grid(rows),
                    32 * kWarpRowsPerBlock, 0, s)(y, x, rows, static_cast<int>(l.n));
    });
    ANVIL_CUDA_CHECK_LAUNCH("softmax_warp_kernel");
  } else {
    const unsigned grid = capped_blocks(rows, 1, kMaxRowBlocks);
    if (l.n <= 4 * kRowThreads)
      launch_kernel(softmax_block_kernel<T, 4, kLog>, grid, kRowThreads, 0, s)(y, x, rows, l.n);
    else if (l.n <= 8 * kRowThreads)
      launch_kernel(softmax_block_kernel<T, 8, kLog>, grid, kRowThreads, 0, s)(y, x, rows, l.n);
    else if (l.n <= 16 * kRowThreads)
      launch_kernel(softmax_block_kernel<T, 16, kLog>, grid, kRowThreads, 0, s)(y, x, rows, l.n);
    else
      launch_kernel(softmax_block_kernel<T, 0, kLog>, grid, kRowThreads, 0, s)(y, x, rows, l.n);
    ANVIL_CUDA_CHECK_LAUNCH("softmax_block_kernel");
  }
}

template <typename T, bool kLog>
void launch_backward(cudaStream_t s, T* gi, const T* go, const T* y, const RowLayout& l) {
  const int64_t rows = l.outer * l.inner;
  if (l.inner != 1) {
    launch_kernel(softmax_backward_inner_kernel<T, kLog>, capped_blocks(rows, kColumnThreads), kColumnThreads, 0, s)(
        gi, go, y, l.outer, l.n, l.inner);
    ANVIL_CUDA_CHECK_LAUNCH("softmax_backward_inner_kernel");
  } else if (l.n <= kWarpRowMaxLength) {
    with_warp_layout<T>(l.n, aligned_16({gi, go, y}), [&](auto per, auto vec) {
      launch_kernel(softmax_backward_warp_kernel<T, decltype(per)::value, decltype(vec)::value, kLog>,
                    warp_row_grid(rows), 32 * kWarpRowsPerBlock, 0, s)(gi, go, y, rows, static_cast<int>(l.n));
    });
    ANVIL_CUDA_CHECK_LAUNCH("softmax_backward_warp_kernel");
  } else {
    launch_kernel(softmax_backward_block_kernel<T, kLog>, capped_blocks(rows, 1, kMaxRowBlocks), kRowThreads, 0, s)(
        gi, go, y, rows, l.n);
    ANVIL_CUDA_CHECK_LAUNCH("softmax_backward_block_kernel");
  }
}

View as_row(const View& v) { return View{v.data, v.dtype, {1}, {1}, v.device_index}; }

int64_t checked_dim(const char* op, int64_t dim, const View& v) {
  const int64_t rank = v.dim();
  ANVIL_CHECK(dim >= -rank && dim < std::max<int64_t>(rank, 1), op, ": dim ", dim, " out of range for shape ", v.shape);
  return dim < 0 ? dim + rank : dim;
}

RowLayout row_layout(const Shape& shape, int64_t dim) {
  RowLayout l{1, shape[dim], 1};
  for (int64_t d = 0; d < dim; ++d) l.outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) l.inner *= shape[d];
  return l;
}

}  // namespace

void softmax(const View& out, const View& in, int64_t dim, bool log) {
  ANVIL_NVTX_RANGE("softmax");
  const char* name = log ? "log_softmax" : "softmax";
  ANVIL_CHECK(out.shape == in.shape, name, ": output shape ", out.shape, " differs from input shape ", in.shape);
  ANVIL_CHECK(out.dtype == in.dtype, name, ": output dtype ", out.dtype, " differs from input dtype ", in.dtype);
  if (in.dim() == 0) return softmax(as_row(out), as_row(in), 0, log);  // a scalar is a row of one
  dim = checked_dim(name, dim, in);
  ANVIL_CHECK(is_floating(in.dtype), name, ": not supported for dtype ", in.dtype, " (floating dtypes only)");
  if (in.numel() == 0) return;
  DeviceGuard guard(in.device_index);
  const cudaStream_t s = stream(in.device_index);
  DenseArg x(cuda_runtime(), in, in.dtype, DenseArg::In), y(cuda_runtime(), out, out.dtype, DenseArg::Out);
  const RowLayout l = row_layout(in.shape, dim);
  visit_floating_device_dtype(name, in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (log)
      launch_forward<T, true>(s, y.ptr<T>(), x.ptr<T>(), l);
    else
      launch_forward<T, false>(s, y.ptr<T>(), x.ptr<T>(), l);
  });
  y.commit();
}

void softmax_backward(const View& grad_in, const View& grad_out, const View& out, int64_t dim, bool log) {
  ANVIL_NVTX_RANGE("softmax_backward");
  const char* name = log ? "log_softmax_backward" : "softmax_backward";
  ANVIL_CHECK(grad_in.shape == out.shape && grad_out.shape == out.shape, name, ": shapes differ: grad_in ",
              grad_in.shape, ", grad_out ", grad_out.shape, ", out ", out.shape);
  ANVIL_CHECK(grad_in.dtype == out.dtype && grad_out.dtype == out.dtype, name, ": dtypes differ: grad_in ",
              grad_in.dtype, ", grad_out ", grad_out.dtype, ", out ", out.dtype);
  if (out.dim() == 0) return softmax_backward(as_row(grad_in), as_row(grad_out), as_row(out), 0, log);
  dim = checked_dim(name, dim, out);
  ANVIL_CHECK(is_floating(out.dtype), name, ": not supported for dtype ", out.dtype, " (floating dtypes only)");
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device_index);
  const cudaStream_t s = stream(out.device_index);
  DenseArg gi(cuda_runtime(), grad_in, out.dtype, DenseArg::Out), go(cuda_runtime(), grad_out, out.dtype, DenseArg::In),
      y(cuda_runtime(), out, out.dtype, DenseArg::In);
  const RowLayout l = row_layout(out.shape, dim);
  visit_floating_device_dtype(name, out.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (log)
      launch_backward<T, true>(s, gi.ptr<T>(), go.ptr<T>(), y.ptr<T>(), l);
    else
      launch_backward<T, false>(s, gi.ptr<T>(), go.ptr<T>(), y.ptr<T>(), l);
  });
  gi.commit();
}

ANVIL_REGISTER_KERNEL(kernel::Softmax, CUDA, softmax);
ANVIL_REGISTER_KERNEL(kernel::SoftmaxBackward, CUDA, softmax_backward);

}  // namespace anvil::cuda
