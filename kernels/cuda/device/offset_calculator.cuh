#pragma once
// Strided indexing for kernels over N operands of one shape: the element with
// row-major (logical) index i lives at offset[k] = sum_d idx_d * strides[d][k]
// in operand k. Sizes and strides travel by value in the kernel's parameters.
//
// The host fills it after dropping size-1 dims and merging dims that are
// contiguous in every operand (kernels/cuda/launch/elementwise_launch.cuh), so a
// contiguous tensor of any rank is one dim and most broadcasts are two: one
// division per element at most in the common cases. When the element count
// fits in 32 bits the divisions are 32-bit (several times cheaper than the
// 64-bit software division). Dims are stored innermost first.
//
// Device-only header (the struct is plain data the host may fill).
#include <cstdint>

namespace anvil::cuda::dev {

inline constexpr int kMaxDims = 12;

template <int N> struct OffsetCalculator {
  int ndim = 0;  // <= kMaxDims; 0 means a single element
  bool index32 = true;  // every logical index fits in uint32
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims][N] = {};  // in elements, may be 0 (broadcast) or negative

  __device__ __forceinline__ void offsets(int64_t linear, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    if (index32) {
      uint32_t rest = static_cast<uint32_t>(linear);
#pragma unroll
      for (int d = 0; d < kMaxDims; ++d) {
        if (d == ndim) break;
        const uint32_t size = static_cast<uint32_t>(sizes[d]);
        const uint32_t q = rest / size;
        const uint32_t i = rest - q * size;
        rest = q;
#pragma unroll
        for (int k = 0; k < N; ++k) off[k] += static_cast<int64_t>(i) * strides[d][k];
      }
    } else {
      int64_t rest = linear;
#pragma unroll
      for (int d = 0; d < kMaxDims; ++d) {
        if (d == ndim) break;
        const int64_t q = rest / sizes[d];
        const int64_t i = rest - q * sizes[d];
        rest = q;
#pragma unroll
        for (int k = 0; k < N; ++k) off[k] += i * strides[d][k];
      }
    }
  }

  __device__ __forceinline__ int64_t offset(int64_t linear) const {  // the first operand's
    int64_t off[N];
    offsets(linear, off);
    return off[0];
  }
};

}  // namespace anvil::cuda::dev
