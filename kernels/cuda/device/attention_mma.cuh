#pragma once
// The warp-level pieces of the tensor-core attention kernels
// (attention_tensor_core.cu, attention_tensor_core_backward.cu): tiles of
// 16-bit rows in shared memory, and the two products every pass is made of,
// each for one warp's 16 rows against a 64-row tile.
//
//   warp_mma_nt   acc[16 x 64] += A[16 x D] . B[64 x D]^T   (S = Q K^T, dP = dO V^T, ...)
//                 A's rows are the mma's M, B's rows its N (ldmatrix as is:
//                 a row of B holds one output column's k values).
//   warp_mma_nn   acc[16 x D] += P[16 x 64] . B[64 x D]     (O += P V, dQ += dS K, ...)
//                 P is a previous warp_mma_nt's accumulator: the C layout of
//                 two n8 tiles is the A layout of one k16 step, so P passes
//                 through registers, rounded to 16 bits (as FlashAttention
//                 does); B's rows are the k index (ldmatrix .trans).
//
// Accumulators are mma m16n8 C fragments (device/tensor_core.cuh): acc[t][e]
// is row g + 8 * (e / 2), column 8t + 2q + e % 2 of the warp's tile, with
// g = lane / 4 and q = lane % 4; each row is spread over the 4 lanes of a
// quad (quad_max / quad_sum reduce over them).
//
// Shared tiles hold 16-bit values as raw bits, rows of kDim (64 or 128: head
// dims up to it, zero-padded) plus 16 bytes of padding so that the 8 row
// addresses of an ldmatrix phase fall in 8 different bank groups.
//
// Device-only header.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "kernels/cuda/device/dtype.cuh"
#include "kernels/cuda/device/tensor_core.cuh"

namespace anvil::cuda::dev::attention_mma {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = kWarps * 16;  // rows a block owns: 16 per warp (one mma M)
constexpr int kTile = 64;  // rows of a streamed tile
constexpr int kTileN8 = kTile / 8;  // n8 accumulator tiles across a streamed tile
constexpr int kPad = 8;  // elements of row padding (16 bytes)
constexpr int kChunk = 8;  // 16-bit elements per 16-byte cp.async

template <int kDim> constexpr int kStride = kDim + kPad;  // elements from one shared row to the next

template <typename T> __device__ __forceinline__ uint16_t bits_of(float v) {
  const T x = cast<T>(v);
  uint16_t b;
  memcpy(&b, &x, sizeof b);
  return b;
}
// Two floats as one register of two 16-bit values, the lower index in the low half.
template <typename T> __device__ __forceinline__ uint32_t pack2(float low, float high) {
  return uint32_t{bits_of<T>(low)} | uint32_t{bits_of<T>(high)} << 16;
}

// Max and sum over the 4 lanes of a quad: the lanes that hold one accumulator row.
__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

// Rows [first, first + rows) of `src` (row length `cols`) into shared `dst`
// by cp.async; past `total` rows or `cols` columns the bytes are zero-filled.
// Every thread of the block takes part; the caller commits and waits.
template <int kDim, typename T>
__device__ __forceinline__ void copy_tile(uint16_t* dst, const T* src, int64_t first, int rows, int64_t total,
                                          int cols) {
  constexpr int kChunksPerRow = kDim / kChunk;
  for (int idx = threadIdx.x; idx < rows * kChunksPerRow; idx += blockDim.x) {
    const int r = idx / kChunksPerRow, c = (idx % kChunksPerRow) * kChunk;
    const int64_t row = first + r;
    const bool in = row < total && c < cols;
    const int bytes = in ? (cols - c < kChunk ? cols - c : kChunk) * 2 : 0;
    cp_async_16(dst + r * kStride<kDim> + c, in ? src + row * cols + c : src, bytes);
  }
}

template <int N> __device__ __forceinline__ void zero(float (&acc)[N][4]) {
#pragma unroll
  for (int t = 0; t < N; ++t)
    for (int e = 0; e < 4; ++e) acc[t][e] = 0.f;
}

// acc[16 x 64] += A[16 x kDim] . B[64 x kDim]^T; `a` points at the warp's
// first row, `b` at the tile's first row, both with kStride<kDim>.
template <typename T, int kDim>
__device__ __forceinline__ void warp_mma_nt(float (&acc)[kTileN8][4], const uint16_t* a, const uint16_t* b) {
  constexpr int S = kStride<kDim>;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int k = 0; k < kDim / 16; ++k) {
    uint32_t af[4];
    ldmatrix_x4(af, a + (lane % 16) * S + k * 16 + (lane / 16) * 8);
#pragma unroll
    for (int np = 0; np < kTile / 16; ++np) {
      // Matrices (rows 0-7, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 0-7), (rows 8-15, k 8-15).
      uint32_t r[4];
      ldmatrix_x4(r, b + (np * 16 + (lane / 16) * 8 + lane % 8) * S + k * 16 + ((lane / 8) % 2) * 8);
      const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
      mma_m16n8k16<T>(acc[2 * np], af, b0);
      mma_m16n8k16<T>(acc[2 * np + 1], af, b1);
    }
  }
}

// acc[16 x kDim] += P[16 x 64] . B[64 x kDim]; `b` at the tile's first row.
template <typename T, int kDim>
__device__ __forceinline__ void warp_mma_nn(float (&acc)[kDim / 8][4], const float (&p)[kTileN8][4],
                                            const uint16_t* b) {
  constexpr int S = kStride<kDim>;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int k = 0; k < kTile / 16; ++k) {
    // P's k16 step k: n8 tiles 2k (k 0-7) and 2k + 1 (k 8-15).
    const uint32_t pa[4] = {pack2<T>(p[2 * k][0], p[2 * k][1]), pack2<T>(p[2 * k][2], p[2 * k][3]),
                            pack2<T>(p[2 * k + 1][0], p[2 * k + 1][1]), pack2<T>(p[2 * k + 1][2], p[2 * k + 1][3])};
#pragma unroll
    for (int np = 0; np < kDim / 16; ++np) {
      uint32_t r[4];  // {r0, r1}: columns 0-7 of this pair, {r2, r3}: columns 8-15
      ldmatrix_x4_trans(r, b + (k * 16 + lane % 16) * S + np * 16 + (lane / 16) * 8);
      const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
      mma_m16n8k16<T>(acc[2 * np], pa, b0);
      mma_m16n8k16<T>(acc[2 * np + 1], pa, b1);
    }
  }
}

// Writes the warp's 16 x kDim accumulator as rows first_row + r of `dst`
// (row length `cols`, `total` rows), this lane's rows g and g + 8 times
// scale[0] and scale[1].
template <typename T, int kDim>
__device__ __forceinline__ void store_rows(T* dst, const float (&acc)[kDim / 8][4], int64_t first_row, int64_t total,
                                           int cols, const float (&scale)[2]) {
  const int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = first_row + g + 8 * h;
    if (row >= total) continue;
#pragma unroll
    for (int t = 0; t < kDim / 8; ++t) {
      for (int e = 0; e < 2; ++e) {
        const int c = 8 * t + 2 * q + e;
        if (c < cols) dst[row * cols + c] = cast<T>(acc[t][2 * h + e] * scale[h]);
      }
    }
  }
}

}  // namespace anvil::cuda::dev::attention_mma
