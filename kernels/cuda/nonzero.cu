// nonzero: the coordinates of the nonzero elements, in row-major order.
// The input is cut into tiles of one block's size (one element per thread):
//   1. count_tiles_kernel   nonzeros per tile (__syncthreads_count);
//   2. scan_tiles_kernel    one block turns the counts into each tile's first
//                           output row (exclusive scan, carried over chunks);
//   3. fill_tiles_kernel    each tile scans its flags in shared memory and
//                           writes its elements' coordinates from its first row.
// The caller learned the total beforehand (core counts with a reduction and
// reads it on the host: that sizes the output); rows past it are not written.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/index_kernels.h"
#include "kernels/cuda/device/kernel_kit.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/cuda/launch/strided_offsets.h"
#include "kernels/shapes/index_checks.h"

namespace anvil::cuda {
namespace {

constexpr int kTile = 256;  // elements per tile = threads per block
constexpr int kScanThreads = 1024;
constexpr int kMaxRank = 16;

struct InputShape {
  int64_t size[kMaxRank];
  int rank;
};

template <typename T>
__device__ __forceinline__ int is_set(const T* in, const dev::OffsetCalculator<1>& offs, int64_t e, int64_t n) {
  if (e >= n) return 0;
  int64_t off[1];
  offs.offsets(e, off);
  return dev::cast<bool>(in[off[0]]) ? 1 : 0;
}

template <typename T>
__global__ void count_tiles_kernel(const T* in, dev::OffsetCalculator<1> offs, int64_t n, int64_t tiles,
                                   int64_t* counts) {
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int c = __syncthreads_count(is_set(in, offs, t * kTile + threadIdx.x, n));
    if (threadIdx.x == 0) counts[t] = c;
  }
}

// In-place inclusive scan of buf[0, blockDim.x) (Hillis-Steele).
__device__ void block_inclusive_scan(int64_t* buf) {
  const unsigned t = threadIdx.x;
  for (unsigned o = 1; o < blockDim.x; o <<= 1) {
    const int64_t add = t >= o ? buf[t - o] : 0;
    __syncthreads();
    buf[t] += add;
    __syncthreads();
  }
}

// One block: first[t] = counts[0] + ... + counts[t - 1].
__global__ void scan_tiles_kernel(const int64_t* counts, int64_t tiles, int64_t* first) {
  __shared__ int64_t buf[kScanThreads];
  int64_t carry = 0;
  for (int64_t base = 0; base < tiles; base += kScanThreads) {
    const int64_t i = base + threadIdx.x;
    const int64_t c = i < tiles ? counts[i] : 0;
    buf[threadIdx.x] = c;
    __syncthreads();
    block_inclusive_scan(buf);
    if (i < tiles) first[i] = carry + buf[threadIdx.x] - c;
    carry += buf[kScanThreads - 1];
    __syncthreads();  // buf is rewritten by the next chunk
  }
}

template <typename T>
__global__ void fill_tiles_kernel(const T* in, dev::OffsetCalculator<1> offs, int64_t n, int64_t tiles,
                                  const int64_t* first, InputShape shape, int64_t* out, int64_t rows,
                                  int64_t row_stride, int64_t col_stride) {
  __shared__ int64_t buf[kTile];
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t e = t * kTile + threadIdx.x;
    const int flag = is_set(in, offs, e, n);
    buf[threadIdx.x] = flag;
    __syncthreads();
    block_inclusive_scan(buf);
    const int64_t row = first[t] + buf[threadIdx.x] - flag;
    if (flag && row < rows) {
      int64_t linear = e;
      for (int d = shape.rank - 1; d >= 0; --d) {
        out[row * row_stride + d * col_stride] = linear % shape.size[d];
        linear /= shape.size[d];
      }
    }
    __syncthreads();  // buf is rewritten by the next tile
  }
}

}  // namespace

void nonzero(const View& out, const View& in) {
  ANVIL_NVTX_RANGE("nonzero");
  shapes::check_nonzero(out, in);
  ANVIL_CHECK(in.dim() <= kMaxRank, "nonzero: at most ", kMaxRank, " dims are supported on CUDA, got input ", in.shape);
  const int64_t n = in.numel(), rows = out.shape[0];
  if (n == 0 || rows == 0 || in.dim() == 0) return;
  DeviceGuard guard(in.device_index);
  const cudaStream_t s = stream(in.device_index);
  InputShape shape{};
  shape.rank = static_cast<int>(in.dim());
  for (int d = 0; d < shape.rank; ++d) shape.size[d] = in.shape[d];
  const auto offs = make_offset_calculator<1>("nonzero", {&in});
  const int64_t tiles = ceil_div(n, kTile);
  Scratch counts(cuda_runtime(), in.device_index, tiles * sizeof(int64_t)),
      first(cuda_runtime(), in.device_index, tiles * sizeof(int64_t));
  const unsigned blocks = capped_blocks(tiles, 1);
  visit_device_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* data = static_cast<const T*>(in.data);
    launch_kernel(count_tiles_kernel<T>, blocks, kTile, 0, s)(data, offs, n, tiles, counts.as<int64_t>());
    ANVIL_CUDA_CHECK_LAUNCH("count_tiles_kernel");
    launch_kernel(scan_tiles_kernel, 1, kScanThreads, 0, s)(counts.as<int64_t>(), tiles, first.as<int64_t>());
    ANVIL_CUDA_CHECK_LAUNCH("scan_tiles_kernel");
    launch_kernel(fill_tiles_kernel<T>, blocks, kTile, 0, s)(data, offs, n, tiles, first.as<int64_t>(), shape,
                                                             static_cast<int64_t*>(out.data), rows, out.strides[0],
                                                             out.strides[1]);
    ANVIL_CUDA_CHECK_LAUNCH("fill_tiles_kernel");
  });
}

ANVIL_REGISTER_KERNEL(kernel::Nonzero, CUDA, nonzero);

}  // namespace anvil::cuda
