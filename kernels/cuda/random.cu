// Random fills and dropout with Philox (core/base/philox.h), producing the
// same numbers as the CPU backend for the same seed and offset: element i is
// the row-major (logical) index in the output's shape and uses counter
// offset + i / 4, lane i % 4. One thread computes one Philox block and writes
// its four elements.
//
// Exactness: uniform values are bit-identical to the CPU. The double-precision
// affine map a + (b - a) * u is written with __dmul_rn/__dadd_rn so nvcc cannot
// fuse it into an FMA (which would round differently from the host). Normal
// values use the precise logf/sinf/cosf/sqrtf (this project never builds with
// --use_fast_math), which are within an ulp or two of glibc's, so they agree
// with the CPU to about 1e-6, not bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "core/base/error.h"
#include "core/base/philox.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/random_kernels.h"
#include "kernels/cuda/device/kernel_kit.cuh"
#include "kernels/cuda/device/vector_access.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/strided_offsets.h"

namespace anvil::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T> constexpr bool is_half_v = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <typename T> __device__ __forceinline__ uint16_t bits16(T v) {
  if constexpr (std::is_same_v<T, __half>)
    return __half_as_ushort(v);
  else
    return __bfloat16_as_ushort(v);
}
template <typename T> __device__ __forceinline__ T from_bits16(uint16_t b) {
  if constexpr (std::is_same_v<T, __half>)
    return __ushort_as_half(b);
  else
    return __ushort_as_bfloat16(b);
}

// The 16-bit float just below finite x, as the CPU's next_below.
template <typename T> __device__ __forceinline__ T next_below16(T x) {
  const uint16_t b = bits16(x);
  if ((b & 0x7fff) == 0) return from_bits16<T>(0x8001);
  return from_bits16<T>((b & 0x8000) ? static_cast<uint16_t>(b + 1) : static_cast<uint16_t>(b - 1));
}

// a + (b - a) * u in T, kept below b (the CPU's uniform_value, operation for operation).
template <typename T> __device__ __forceinline__ T uniform_value(double a, double b, float u) {
  const double v = __dadd_rn(a, __dmul_rn(__dsub_rn(b, a), static_cast<double>(u)));
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(floor(v));
  } else if constexpr (std::is_same_v<T, double>) {
    return v >= b && b > a ? nextafter(b, a) : v;
  } else if constexpr (std::is_same_v<T, float>) {
    const float t = __double2float_rn(v), fb = __double2float_rn(b);
    return t >= fb && b > a ? nextafterf(fb, __double2float_rn(a)) : t;
  } else {
    const T t = kit::store_as<T>(__double2float_rn(v));
    const T tb = kit::store_as<T>(__double2float_rn(b));
    return kit::load_as<float>(t) >= kit::load_as<float>(tb) && b > a ? next_below16(tb) : t;
  }
}

template <typename T> __device__ __forceinline__ T normal_value(double a, double b, float z) {
  const double v = __dadd_rn(a, __dmul_rn(b, static_cast<double>(z)));
  if constexpr (std::is_same_v<T, double>)
    return v;
  else if constexpr (std::is_same_v<T, float>)
    return __double2float_rn(v);
  else
    return kit::store_as<T>(__double2float_rn(v));
}

// Box-Muller on one lane pair, as philox::normal_at.
__device__ __forceinline__ void box_muller(uint32_t b1, uint32_t b2, float& z0, float& z1) {
  const float u1 = philox::to_uniform(b1) + (0.5f / 16777216.0f);
  const float u2 = philox::to_uniform(b2);
  const float radius = sqrtf(-2.0f * logf(u1));
  const float angle = 6.28318530717958647f * u2;
  z0 = radius * cosf(angle);
  z1 = radius * sinf(angle);
}

template <typename T, bool kNormal, bool kContiguous>
__global__ void random_kernel(T* out, dev::OffsetCalculator<1> offs, int64_t n, double a, double b, uint64_t seed,
                              uint64_t offset) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < blocks;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const philox::Uint4 r = philox::philox4x32(seed, offset + static_cast<uint64_t>(c));
    T v[4];
    if constexpr (kNormal) {
      float z[4];
      box_muller(r.x, r.y, z[0], z[1]);
      box_muller(r.z, r.w, z[2], z[3]);
#pragma unroll
      for (int l = 0; l < 4; ++l) v[l] = normal_value<T>(a, b, z[l]);
    } else {
#pragma unroll
      for (int l = 0; l < 4; ++l) v[l] = uniform_value<T>(a, b, philox::to_uniform(philox::lane(r, l)));
    }
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int64_t i = 4 * c + l;
      if (i >= n) break;
      if constexpr (kContiguous) {
        out[i] = v[l];
      } else {
        int64_t off[1];
        offs.offsets(i, off);
        out[off[0]] = v[l];
      }
    }
  }
}

template <typename T, typename C, bool kContiguous>
__global__ void dropout_kernel(T* out, uint8_t* mask, const T* in, dev::OffsetCalculator<3> offs, int64_t n, double p,
                               C scale, uint64_t seed, uint64_t offset, bool vectors) {
  const int64_t blocks = (n + 3) / 4;
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < blocks;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const philox::Uint4 r = philox::philox4x32(seed, offset + static_cast<uint64_t>(c));
    bool keep[4];
#pragma unroll
    for (int l = 0; l < 4; ++l) keep[l] = static_cast<double>(philox::to_uniform(philox::lane(r, l))) >= p;
    // A whole chunk of four on aligned contiguous data: one vector access per
    // tensor (the scalar loop below has each warp-wide access span 4x the
    // bytes it uses: a quarter of every sector it touches is wasted).
    if (kContiguous && vectors && 4 * c + 3 < n) {
      const dev::Vec<T, 4> x = dev::load_vec<4>(in + 4 * c);
      dev::Vec<T, 4> y;
      dev::Vec<uint8_t, 4> m;
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        y.v[l] = kit::store_as<T>(keep[l] ? kit::load_as<C>(x.v[l]) * scale : C(0));
        m.v[l] = keep[l] ? 1 : 0;
      }
      dev::store_vec<4>(out + 4 * c, y);
      dev::store_vec<4>(mask + 4 * c, m);
      continue;
    }
#pragma unroll
    for (int l = 0; l < 4; ++l) {
      const int64_t i = 4 * c + l;
      if (i >= n) break;
      int64_t off[3] = {i, i, i};
      if constexpr (!kContiguous) offs.offsets(i, off);
      const C x = kit::load_as<C>(in[off[2]]);
      out[off[0]] = kit::store_as<T>(keep[l] ? x * scale : C(0));
      mask[off[1]] = keep[l] ? 1 : 0;
    }
  }
}

// Each thread draws 4 values per Philox call; the grid is capped here and
// its threads loop over the rest (grid-stride).
constexpr int64_t kPhiloxMaxBlocks = 8192;
unsigned philox_grid(int64_t n) { return capped_blocks((n + 3) / 4, kThreads, kPhiloxMaxBlocks); }

template <typename T, bool kNormal> void launch_random(cudaStream_t s, const View& out, const RandomParams& p) {
  const int64_t n = out.numel();
  T* data = static_cast<T*>(out.data);
  if (out.is_contiguous()) {
    launch_kernel(random_kernel<T, kNormal, true>, philox_grid(n), kThreads, 0, s)(data, {}, n, p.a, p.b, p.seed,
                                                                                   p.offset);
  } else {
    const auto offs = make_offset_calculator<1>("random", out.shape, {&out.strides});
    launch_kernel(random_kernel<T, kNormal, false>, philox_grid(n), kThreads, 0, s)(data, offs, n, p.a, p.b, p.seed,
                                                                                    p.offset);
  }
  ANVIL_CUDA_CHECK_LAUNCH("random_kernel");
}

}  // namespace

void random(const View& out, const RandomParams& p) {
  ANVIL_NVTX_RANGE("random");
  const bool normal = p.kind == RandomKind::Normal;
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device_index);
  const cudaStream_t s = stream(out.device_index);
  switch (out.dtype) {
    case DType::Bool:
      fail("random: not supported for dtype bool");
    case DType::Int32:
    case DType::Int64:
    case DType::UInt8:
      ANVIL_CHECK(!normal, "random normal: not supported for dtype ", out.dtype, " (floating dtypes only)");
      if (out.dtype == DType::Int32)
        launch_random<int32_t, false>(s, out, p);
      else if (out.dtype == DType::Int64)
        launch_random<int64_t, false>(s, out, p);
      else
        launch_random<uint8_t, false>(s, out, p);
      return;
    default:
      visit_floating_device_dtype("random", out.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (normal)
          launch_random<T, true>(s, out, p);
        else
          launch_random<T, false>(s, out, p);
      });
  }
}

void dropout(const View& out, const View& mask, const View& in, double p, uint64_t seed, uint64_t offset) {
  ANVIL_NVTX_RANGE("dropout");
  ANVIL_CHECK(out.shape == in.shape && mask.shape == in.shape, "dropout: shapes differ: out ", out.shape, ", mask ",
              mask.shape, ", in ", in.shape);
  ANVIL_CHECK(out.dtype == in.dtype, "dropout: output dtype ", out.dtype, " differs from input dtype ", in.dtype);
  ANVIL_CHECK(mask.dtype == kUInt8 || mask.dtype == kBool, "dropout: mask dtype must be uint8, got ", mask.dtype);
  ANVIL_CHECK(p >= 0 && p <= 1, "dropout: probability must be in [0, 1], got ", p);
  const int64_t n = in.numel();
  if (n == 0) return;
  DeviceGuard guard(in.device_index);
  const cudaStream_t s = stream(in.device_index);
  const bool contiguous = out.is_contiguous() && mask.is_contiguous() && in.is_contiguous();
  const auto offs = contiguous
                        ? dev::OffsetCalculator<3>{}
                        : make_offset_calculator<3>("dropout", in.shape, {&out.strides, &mask.strides, &in.strides});
  visit_floating_device_dtype("dropout", in.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = kit::acc_t<T>;
    const C scale = C(1.0 / (1.0 - p));  // inf when p == 1, but then nothing is kept
    T* o = static_cast<T*>(out.data);
    uint8_t* m = static_cast<uint8_t*>(mask.data);
    const T* x = static_cast<const T*>(in.data);
    const bool vectors =
        dev::vec_aligned(o, 4 * sizeof(T)) && dev::vec_aligned(x, 4 * sizeof(T)) && dev::vec_aligned(m, 4);
    if (contiguous)
      launch_kernel(dropout_kernel<T, C, true>, philox_grid(n), kThreads, 0, s)(o, m, x, offs, n, p, scale, seed,
                                                                                offset, vectors);
    else
      launch_kernel(dropout_kernel<T, C, false>, philox_grid(n), kThreads, 0, s)(o, m, x, offs, n, p, scale, seed,
                                                                                 offset, false);
    ANVIL_CUDA_CHECK_LAUNCH("dropout_kernel");
  });
}

ANVIL_REGISTER_KERNEL(kernel::Dropout, CUDA, dropout);
ANVIL_REGISTER_KERNEL(kernel::Random, CUDA, random);

}  // namespace anvil::cuda
