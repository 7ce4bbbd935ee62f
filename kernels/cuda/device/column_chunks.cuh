#pragma once
// Column sums of per-element terms over the rows of a [rows, cols] matrix, in
// two fixed stages so they are deterministic without atomics (layer_norm's
// weight and bias gradients, rms_norm's weight gradient):
//   1. a grid of (column tiles, chunks of rows), blocks of (kColTile,
//      kRowLanes) threads: sum_column_chunk adds one chunk's rows of 32
//      columns into partial[chunk, col], row lanes combined in lane order;
//   2. sum_column_chunks_kernel adds each column's chunks in chunk order.
// K sums run side by side (K = 2: weight and bias from one read of the rows).
#include <algorithm>
#include <cstdint>

namespace anvil::cuda::dev {

inline constexpr int kColTile = 32, kRowLanes = 8;

template <typename C, int K> struct ColumnChunkSums {
  C* partial[K];  // [chunks, cols] each
  C* out[K];  // [cols] each; stage 2 skips a null one
};

// How many chunks of how many rows: about 64 rows each, at most 256 chunks.
struct RowChunks {
  int64_t chunks, rows_per_chunk;
};
inline RowChunks row_chunks(int64_t rows) {
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>((rows + 63) / 64, 256));
  return {chunks, std::max<int64_t>(1, (rows + chunks - 1) / chunks)};
}

// Stage 1 for block (blockIdx.x, blockIdx.y): term(r, col, acc) adds row r's
// terms of column col to acc[0..K).
template <typename C, int K, typename Term>
__device__ __forceinline__ void sum_column_chunk(const ColumnChunkSums<C, K>& s, int64_t rows, int64_t cols,
                                                 int64_t rows_per_chunk, Term term) {
  __shared__ C lanes[K][kRowLanes][kColTile + 1];
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColTile + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = min(rows, r0 + rows_per_chunk);
  C acc[K];
  for (int k = 0; k < K; ++k) acc[k] = 0;
  if (col < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kRowLanes) term(r, col, acc);
  for (int k = 0; k < K; ++k) lanes[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    for (int k = 0; k < K; ++k) {
      for (int lane = 1; lane < kRowLanes; ++lane) acc[k] += lanes[k][lane][threadIdx.x];
      s.partial[k][blockIdx.y * cols + col] = acc[k];
    }
  }
}

// Stage 2: out[k][col] = the sum of partial[k][chunk, col] over the chunks, in order.
template <typename C, int K>
__global__ void sum_column_chunks_kernel(ColumnChunkSums<C, K> s, int64_t chunks, int64_t cols) {
  for (int64_t col = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; col < cols;
       col += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    for (int k = 0; k < K; ++k) {
      if (!s.out[k]) continue;
      C acc = 0;
      for (int64_t c = 0; c < chunks; ++c) acc += s.partial[k][c * cols + col];
      s.out[k][col] = acc;
    }
  }
}

}  // namespace anvil::cuda::dev
