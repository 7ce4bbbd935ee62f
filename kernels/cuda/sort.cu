// Sort along one dim (kernels/ops/sort_ops.h's order): one block per row, a
// bitonic sorting network over the row padded to a power of two P, on
// (key, index) pairs so that equal keys keep their order (the network alone
// is not stable). Padding slots sort after every element. Rows whose pairs
// fit in shared memory (P * (sizeof key + 8) <= 32 KiB: 2048 floats) sort
// there; longer rows sort the same way in a global scratch buffer holding
// every row, one launch per pass of the network (log2(P)^2 / 2 launches).
// The input is contiguous (else gathered into scratch), seen as
// [outer, n, inner]; the sorted keys are then written back from the input by
// index, so values are the input's own bits.
#include <cuda_runtime_api.h>

#include <cstdint>

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
#include "kernels/ops/sort_ops.h"

namespace anvil::cuda {
namespace {

constexpr int kMaxSortThreads = 512;
constexpr int64_t kSharedSortBytes = 32 * 1024;

// Whether slot a goes before slot b; slots at index >= n are padding, last.
template <typename K>
__device__ __forceinline__ bool slot_before(const K* key, const int64_t* idx, int a, int b, int64_t n, bool desc) {
  const bool pa = idx[a] >= n, pb = idx[b] >= n;
  if (pa || pb) return pa != pb ? pb : idx[a] < idx[b];
  return ops::sorts_before(key[a], idx[a], key[b], idx[b], desc);
}

// keys/idx: the row's P slots (shared memory, or this row's part of scratch).
template <typename T, typename K>
__device__ void bitonic_sort_row(K* key, int64_t* idx, const T* x, int64_t n, int64_t inner, int P, bool desc) {
  for (int i = threadIdx.x; i < P; i += blockDim.x) {
    idx[i] = i;
    key[i] = i < n ? dev::cast<K>(x[i * inner]) : K(0);
  }
  __syncthreads();
  for (int k = 2; k <= P; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < P; i += blockDim.x) {
        const int partner = i ^ j;
        if (partner <= i) continue;
        const bool ascending_run = (i & k) == 0;
        // In an ascending run the pair is swapped when partner goes first.
        if (slot_before(key, idx, partner, i, n, desc) == ascending_run) {
          const K tk = key[i];
          key[i] = key[partner];
          key[partner] = tk;
          const int64_t ti = idx[i];
          idx[i] = idx[partner];
          idx[partner] = ti;
        }
      }
      __syncthreads();
    }
  }
}

template <typename T, typename K>
__global__ void sort_rows_kernel(T* values, int64_t* indices, const T* in, int64_t outer, int64_t n, int64_t inner,
                                 int P, bool desc, K* scratch_keys, int64_t* scratch_idx) {
  const int64_t rows = outer * inner;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t o = row / inner, k = row - o * inner;
    const int64_t base = o * n * inner + k;
    K* key;
    int64_t* idx;
    if (scratch_keys == nullptr) {  // the row in shared memory: indices first (8-byte aligned), then keys
      idx = dev::dynamic_shared<int64_t>();
      key = reinterpret_cast<K*>(idx + P);
    } else {
      key = scratch_keys + blockIdx.x * static_cast<int64_t>(P);
      idx = scratch_idx + blockIdx.x * static_cast<int64_t>(P);
    }
    bitonic_sort_row<T, K>(key, idx, in + base, n, inner, P, desc);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const int64_t from = idx[i];
      values[base + i * inner] = in[base + from * inner];
      indices[base + i * inner] = from;
    }
    __syncthreads();  // the slots are read before the next row refills them
  }
}

// The long-row path: the same network on scratch holding every row's P
// slots, one launch per pass (launches are the barriers between passes).
template <typename T, typename K>
__global__ void bitonic_fill_kernel(K* key, int64_t* idx, const T* in, int64_t rows, int64_t n, int64_t inner, int P) {
  const int64_t total = rows * P;
  for (int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; s < total;
       s += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = s / P, i = s - row * P;
    const int64_t o = row / inner, k = row - o * inner;
    idx[s] = i;
    key[s] = i < n ? dev::cast<K>(in[o * n * inner + k + i * inner]) : K(0);
  }
}

template <typename K>
__global__ void bitonic_pass_kernel(K* key, int64_t* idx, int64_t rows, int64_t n, int P, int k, int j, bool desc) {
  const int64_t half = static_cast<int64_t>(P) / 2, total = rows * half;
  for (int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; p < total;
       p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = p / half, q = p - row * half;
    // The q-th pair of this pass: i has bit j clear, partner = i | j.
    const int i = static_cast<int>(((q / j) * 2 * j) + (q % j)), partner = i | j;
    K* rk = key + row * P;
    int64_t* ri = idx + row * P;
    const bool ascending_run = (i & k) == 0;
    if (slot_before(rk, ri, partner, i, n, desc) == ascending_run) {
      const K tk = rk[i];
      rk[i] = rk[partner];
      rk[partner] = tk;
      const int64_t ti = ri[i];
      ri[i] = ri[partner];
      ri[partner] = ti;
    }
  }
}

template <typename T>
__global__ void bitonic_write_kernel(T* values, int64_t* indices, const T* in, const int64_t* idx, int64_t rows,
                                     int64_t n, int64_t inner, int P) {
  const int64_t total = rows * n;
  for (int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; s < total;
       s += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = s / n, i = s - row * n;
    const int64_t o = row / inner, k = row - o * inner, base = o * n * inner + k;
    const int64_t from = idx[row * P + i];
    values[base + i * inner] = in[base + from * inner];
    indices[base + i * inner] = from;
  }
}

template <typename T>
void launch_sort(CudaRuntime& backend, int device, cudaStream_t s, T* values, int64_t* indices, const T* in,
                 int64_t outer, int64_t n, int64_t inner, bool desc) {
  using K = dev::compute_t<T>;
  ANVIL_CHECK(n <= (int64_t{1} << 30), "sort: rows of ", n, " elements are longer than the CUDA sort handles (2^30)");
  int P = 1;
  while (P < n) P <<= 1;
  const int threads = P / 2 < 32 ? 32 : P / 2 > kMaxSortThreads ? kMaxSortThreads : P / 2;
  const int64_t rows = outer * inner;
  const int64_t slot_bytes = static_cast<int64_t>(sizeof(K) + sizeof(int64_t));
  if (P * slot_bytes <= kSharedSortBytes) {
    launch_kernel(sort_rows_kernel<T, K>, capped_blocks(rows, 1, kMaxRowBlocks), threads, P * slot_bytes, s)(
        values, indices, in, outer, n, inner, P, desc, nullptr, nullptr);
    ANVIL_CUDA_CHECK_LAUNCH("sort_rows_kernel (shared)");
  } else {
    constexpr int kThreads = 256;
    Scratch keys(backend, device, static_cast<size_t>(rows) * P * sizeof(K));
    Scratch idx(backend, device, static_cast<size_t>(rows) * P * sizeof(int64_t));
    launch_kernel(bitonic_fill_kernel<T, K>, capped_blocks(rows * P, kThreads), kThreads, 0, s)(
        keys.as<K>(), idx.as<int64_t>(), in, rows, n, inner, P);
    ANVIL_CUDA_CHECK_LAUNCH("bitonic_fill_kernel");
    for (int k = 2; k <= P; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        launch_kernel(bitonic_pass_kernel<K>, capped_blocks(rows * (P / 2), kThreads), kThreads, 0, s)(
            keys.as<K>(), idx.as<int64_t>(), rows, n, P, k, j, desc);
        ANVIL_CUDA_CHECK_LAUNCH("bitonic_pass_kernel");
      }
    }
    launch_kernel(bitonic_write_kernel<T>, capped_blocks(rows * n, kThreads), kThreads, 0, s)(
        values, indices, in, idx.as<int64_t>(), rows, n, inner, P);
    ANVIL_CUDA_CHECK_LAUNCH("bitonic_write_kernel");
  }
}

}  // namespace

void sort(const View& values, const View& indices, const View& in, int64_t dim, const SortParams& p) {
  ANVIL_NVTX_RANGE("sort");
  ANVIL_CHECK(
      values.shape == in.shape && indices.shape == in.shape && values.dtype == in.dtype && indices.dtype == kInt64,
      "sort: expected values ", in.dtype, in.shape, " and indices int64", in.shape, ", got values ", values.dtype,
      values.shape, " and indices ", indices.dtype, indices.shape);
  ANVIL_CHECK(in.dim() == 0 ? (dim == 0 || dim == -1) : (dim >= 0 && dim < in.dim()), "sort: dim ", dim,
              " out of range for shape ", in.shape);
  if (in.numel() == 0) return;
  int64_t outer = 1, n = 1, inner = 1;
  if (in.dim() > 0) {
    n = in.shape[dim];
    for (int64_t d = 0; d < dim; ++d) outer *= in.shape[d];
    for (int64_t d = dim + 1; d < in.dim(); ++d) inner *= in.shape[d];
  }
  DeviceGuard guard(in.device_index);
  const cudaStream_t s = stream(in.device_index);
  DenseArg x(cuda_runtime(), in, in.dtype, DenseArg::In), v(cuda_runtime(), values, values.dtype, DenseArg::Out),
      i(cuda_runtime(), indices, kInt64, DenseArg::Out);
  visit_device_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_sort<T>(cuda_runtime(), in.device_index, s, v.ptr<T>(), i.ptr<int64_t>(), x.ptr<T>(), outer, n, inner,
                   p.descending);
  });
  v.commit();
  i.commit();
}

ANVIL_REGISTER_KERNEL(kernel::Sort, CUDA, sort);

}  // namespace anvil::cuda
