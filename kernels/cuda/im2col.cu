// im2col and col2im; see im2col.h for the layout.
#include "kernels/cuda/im2col.h"

#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/device/dtype.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"

namespace anvil::cuda {
namespace {

constexpr int kThreads = 256;
using shapes::ConvGeometry;

// One thread per column entry; consecutive threads take consecutive output
// pixels, so the stores are coalesced and the loads nearly so (stride sw).
template <typename T>
__global__ void im2col_kernel(T* __restrict__ cols, const T* __restrict__ x, ConvGeometry g, int64_t group) {
  const int64_t pixels = g.ho * g.wo, width = g.n * pixels;
  const int64_t total = g.col_rows() * width;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t col = i % width, row = i / width;
    const int64_t n = col / pixels, oh = (col % pixels) / g.wo, ow = col % g.wo;
    const int64_t kj = row % g.kw, ki = (row / g.kw) % g.kh, ci = row / (g.kh * g.kw);
    const int64_t ih = oh * g.sh - g.ph + ki * g.dh, iw = ow * g.sw - g.pw + kj * g.dw;
    const int64_t channel = group * g.cin_per_group() + ci;
    const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
    cols[i] = inside ? x[((n * g.c + channel) * g.h + ih) * g.w + iw] : T{};
  }
}

// Output positions o along one dim with o*s - p + k*d == i, for a fixed k:
// at most one; false when there is none inside [0, out).
__device__ __forceinline__ bool source_of(int64_t i, int64_t k, int64_t s, int64_t p, int64_t d, int64_t out,
                                          int64_t& o) {
  const int64_t t = i + p - k * d;
  if (t < 0 || t % s != 0) return false;
  o = t / s;
  return o < out;
}

// One thread per input element of the group: sums the column entries that
// copied it, kernel positions in row-major order.
template <typename T>
__global__ void col2im_kernel(T* __restrict__ dx, const T* __restrict__ cols, ConvGeometry g, int64_t group) {
  using A = dev::acc_t<T>;
  const int64_t cg = g.cin_per_group(), pixels = g.ho * g.wo, width = g.n * pixels;
  const int64_t total = g.n * cg * g.h * g.w;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t iw = i % g.w, ih = (i / g.w) % g.h, ci = (i / (g.w * g.h)) % cg, n = i / (g.w * g.h * cg);
    A sum = 0;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      int64_t oh;
      if (!source_of(ih, ki, g.sh, g.ph, g.dh, g.ho, oh)) continue;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        int64_t ow;
        if (!source_of(iw, kj, g.sw, g.pw, g.dw, g.wo, ow)) continue;
        const int64_t row = (ci * g.kh + ki) * g.kw + kj;
        sum += dev::load_as<A>(cols + row * width + n * pixels + oh * g.wo + ow);
      }
    }
    const int64_t channel = group * cg + ci;
    dev::store_from(dx + ((n * g.c + channel) * g.h + ih) * g.w + iw, sum);
  }
}

}  // namespace

void im2col(DType dtype, void* cols, const void* x, const ConvGeometry& g, int64_t group, cudaStream_t stream) {
  const int64_t total = g.col_rows() * g.n * g.ho * g.wo;
  if (total == 0) return;
  visit_floating_device_dtype("conv2d (im2col)", dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(im2col_kernel<T>, capped_blocks(total, kThreads), kThreads, 0, stream)(
        static_cast<T*>(cols), static_cast<const T*>(x), g, group);
    ANVIL_CUDA_CHECK_LAUNCH("im2col_kernel");
  });
}

void col2im(DType dtype, void* dx, const void* cols, const ConvGeometry& g, int64_t group, cudaStream_t stream) {
  const int64_t total = g.n * g.cin_per_group() * g.h * g.w;
  if (total == 0) return;
  visit_floating_device_dtype("conv2d_backward_input (col2im)", dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(col2im_kernel<T>, capped_blocks(total, kThreads), kThreads, 0, stream)(
        static_cast<T*>(dx), static_cast<const T*>(cols), g, group);
    ANVIL_CUDA_CHECK_LAUNCH("col2im_kernel");
  });
}

}  // namespace anvil::cuda
