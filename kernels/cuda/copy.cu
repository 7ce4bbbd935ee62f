// CudaRuntime::copy and fill.
//
// copy: same dtype and both contiguous -> cudaMemcpyAsync; same dtype and a
// transpose-like layout (the destination contiguous along the innermost
// merged dim, the source along the next one: .contiguous() of a transposed or
// permuted view) -> 32x32 shared-memory tiles so both the reads and the writes
// are coalesced; other same-dtype copies move raw bits through the strided
// elementwise kernel; dtype casts go through dev::cast, the CPU's rules.
// fill: the Scalar is converted on the host exactly as the CPU does, then its
// bit pattern is written (cudaMemsetAsync when it is all zero bytes).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/base/error.h"
#include "core/base/half.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/cuda/device/dtype.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/elementwise_launch.cuh"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/shapes/bits_of.h"

namespace anvil::cuda {
namespace {

using shapes::bits_of;

template <typename To, typename From> struct CastF {
  __device__ __forceinline__ To operator()(From x) const { return dev::cast<To>(x); }
};

// ---- tiled transpose ----
constexpr int kTile = 32, kTileRows = 8;

// dst[j * dst_s1 + i] = src[i * src_s0 + j] for i < n0, j < n1, per outer index z.
template <typename Bits>
__global__ void __launch_bounds__(kTile* kTileRows)
    transpose_tiles(Bits* dst, const Bits* src, int64_t n0, int64_t n1, int64_t dst_s1, int64_t src_s0,
                    dev::OffsetCalculator<2> outer, int64_t n_outer) {
  __shared__ Bits tile[kTile][kTile + 1];  // +1: the column reads hit 32 different banks
  const int64_t i0 = static_cast<int64_t>(blockIdx.x) * kTile, j0 = static_cast<int64_t>(blockIdx.y) * kTile;
  for (int64_t z = blockIdx.z; z < n_outer; z += gridDim.z) {
    int64_t off[2];
    outer.offsets(z, off);
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {  // coalesced along the source's j
      const int64_t i = i0 + k, j = j0 + threadIdx.x;
      if (i < n0 && j < n1) tile[k][threadIdx.x] = src[off[1] + i * src_s0 + j];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {  // coalesced along the destination's i
      const int64_t j = j0 + k, i = i0 + threadIdx.x;
      if (i < n0 && j < n1) dst[off[0] + j * dst_s1 + i] = tile[threadIdx.x][k];
    }
    __syncthreads();
  }
}

template <typename Bits> bool copy_in_tiles(const View& dst, const View& src, cudaStream_t stream) {
  const auto calc = make_offset_calculator<2>("copy", {&dst, &src});  // dims innermost first, strides {dst, src}
  if (calc.ndim < 2 || calc.strides[0][0] != 1 || calc.strides[1][1] != 1 || calc.strides[0][1] == 1) return false;
  const int64_t n0 = calc.sizes[0], n1 = calc.sizes[1];
  const int64_t tiles0 = (n0 + kTile - 1) / kTile, tiles1 = (n1 + kTile - 1) / kTile;
  if (tiles0 > INT32_MAX || tiles1 > kMaxGridDimYZ) return false;
  dev::OffsetCalculator<2> outer;
  int64_t n_outer = 1;
  for (int d = 2; d < calc.ndim; ++d) {
    outer.sizes[outer.ndim] = calc.sizes[d];
    outer.strides[outer.ndim][0] = calc.strides[d][0];
    outer.strides[outer.ndim][1] = calc.strides[d][1];
    ++outer.ndim;
    n_outer *= calc.sizes[d];
  }
  outer.index32 = n_outer <= static_cast<int64_t>(UINT32_MAX);
  const dim3 grid(static_cast<unsigned>(tiles0), static_cast<unsigned>(tiles1),
                  static_cast<unsigned>(std::min<int64_t>(n_outer, kMaxGridDimYZ)));
  launch_kernel(transpose_tiles<Bits>, grid, dim3(kTile, kTileRows), 0, stream)(
      dst.ptr<Bits>(), src.ptr<const Bits>(), n0, n1, calc.strides[1][0], calc.strides[0][1], outer, n_outer);
  ANVIL_CUDA_CHECK_LAUNCH("copy (tiled transpose)");
  return true;
}

// ---- fill ----
template <typename Bits>
__global__ void __launch_bounds__(kElementwiseThreads) fill_contiguous(Bits* out, int64_t n, Bits value) {
  constexpr int V = dev::vec_size_v<Bits>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // The host passes an out aligned to 16 bytes.
  dev::Vec<Bits, V> v;
#pragma unroll
  for (int j = 0; j < V; ++j) v.v[j] = value;
  const int64_t nvec = n / V;
  for (int64_t i = first; i < nvec; i += step) dev::store_vec<V>(out + i * V, v);
  for (int64_t i = nvec * V + first; i < n; i += step) out[i] = value;
}

template <typename Bits>
__global__ void __launch_bounds__(kElementwiseThreads)
    fill_strided(Bits* out, int64_t n, Bits value, dev::OffsetCalculator<1> calc) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    out[calc.offset(i)] = value;
}

// The Scalar as the host type of the dtype, as kernels/cpu/memory.cpp's scalar_as.
template <typename H> H host_cast(double v) {
  if constexpr (std::is_same_v<H, bool>)
    return v != 0.0;
  else if constexpr (std::is_integral_v<H>)
    return float_to_int<H>(v);
  else
    return H(static_cast<float>(v));
}
template <typename H> H scalar_as(const Scalar& value) {
  if constexpr (std::is_same_v<H, bool>)
    return value.to_double() != 0.0 || value.to_int() != 0;
  else if constexpr (std::is_integral_v<H>)
    return value.is_floating() ? host_cast<H>(value.to_double()) : static_cast<H>(value.to_int());
  else if constexpr (std::is_same_v<H, double>)
    return value.to_double();
  else
    return H(static_cast<float>(value.to_double()));  // float, Half, BFloat16 (double -> float first)
}

uint64_t fill_bits(const Scalar& value, DType dtype) {
  uint64_t bits = 0;
  visit_dtype(dtype, [&](auto tag) {
    using H = decltype(tag);
    const H v = scalar_as<H>(value);
    static_assert(sizeof(H) <= sizeof(bits));
    std::memcpy(&bits, &v, sizeof(H));
  });
  return bits;
}

}  // namespace

void CudaRuntime::copy(const View& dst, const View& src) {
  ANVIL_NVTX_RANGE("copy");
  ANVIL_CHECK(dst.shape == src.shape, "copy: destination shape ", dst.shape, " differs from source shape ", src.shape);
  ANVIL_CHECK(dst.device_index == src.device_index, "copy: source on cuda:", src.device_index,
              " and destination on cuda:", dst.device_index, " (copy between GPUs goes through the host)");
  const int64_t n = dst.numel();
  if (n == 0) return;
  DeviceGuard guard(dst.device_index);
  cudaStream_t s = stream(dst.device_index);
  const int device = dst.device_index;
  if (dst.dtype == src.dtype) {
    const size_t item = itemsize(dst.dtype);
    if (dst.is_contiguous() && src.is_contiguous()) {
      if (dst.data != src.data)
        ANVIL_CUDA_CHECK(
            cudaMemcpyAsync(dst.data, src.data, static_cast<size_t>(n) * item, cudaMemcpyDeviceToDevice, s));
      return;
    }
    auto move_bits = [&](auto bits_tag) {
      using Bits = decltype(bits_tag);
      if (copy_in_tiles<Bits>(dst, src, s)) return;
      launch_elementwise<Bits, Bits>("copy", s, device, dst, src, CastF<Bits, Bits>{});
    };
    switch (item) {
      case 1:
        return move_bits(uint8_t{});
      case 2:
        return move_bits(uint16_t{});
      case 4:
        return move_bits(uint32_t{});
      case 8:
        return move_bits(uint64_t{});
      default:
        fail("copy: unsupported item size ", item, " of dtype ", dst.dtype);
    }
  }
  visit_device_dtype(dst.dtype, [&](auto dst_tag) {
    using To = decltype(dst_tag);
    visit_device_dtype(src.dtype, [&](auto src_tag) {
      using From = decltype(src_tag);
      launch_elementwise<To, From>("copy (cast)", s, device, dst, src, CastF<To, From>{});
    });
  });
}

void fill(const View& out, const Scalar& value) {
  ANVIL_NVTX_RANGE("fill");
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceGuard guard(out.device_index);
  cudaStream_t s = stream(out.device_index);
  const size_t item = itemsize(out.dtype);
  const uint64_t bits = fill_bits(value, out.dtype);
  if (bits == 0 && out.is_contiguous()) {
    ANVIL_CUDA_CHECK(cudaMemsetAsync(out.data, 0, static_cast<size_t>(n) * item, s));
    return;
  }
  auto launch = [&](auto bits_tag) {
    using Bits = decltype(bits_tag);
    const Bits v = static_cast<Bits>(bits);
    if (out.is_contiguous() && dev::vec_aligned(out.data, dev::kVecBytes)) {
      launch_kernel(
          fill_contiguous<Bits>,
          wave_blocks((n + dev::vec_size_v<Bits> - 1) / dev::vec_size_v<Bits>, kElementwiseThreads, out.device_index),
          kElementwiseThreads, 0, s)(out.ptr<Bits>(), n, v);
      ANVIL_CUDA_CHECK_LAUNCH("fill");
    } else {
      const auto calc = make_offset_calculator<1>("fill", {&out});
      launch_kernel(fill_strided<Bits>, wave_blocks(n, kElementwiseThreads, out.device_index), kElementwiseThreads, 0,
                    s)(out.ptr<Bits>(), n, v, calc);
      ANVIL_CUDA_CHECK_LAUNCH("fill (strided)");
    }
  };
  switch (item) {
    case 1:
      return launch(uint8_t{});
    case 2:
      return launch(uint16_t{});
    case 4:
      return launch(uint32_t{});
    case 8:
      return launch(uint64_t{});
    default:
      fail("fill: unsupported item size ", item, " of dtype ", out.dtype);
  }
}

ANVIL_REGISTER_KERNEL(kernel::Fill, CUDA, fill);

}  // namespace anvil::cuda
