#pragma once
// Device-side pieces of the flash-attention kernels (kernels/cuda/attention.cu):
// the plain argument structs the host fills, one masked score, the dropout
// factor, the backward's per-pair terms, and the cooperative load of a row
// tile into shared memory.
#include <cmath>
#include <cstdint>

#include "core/base/philox.h"
#include "kernels/cuda/device/dtype.cuh"
#include "kernels/ops/attention_kernels.h"

namespace anvil::cuda::dev {

enum AttentionMaskKind : int { kAttnMaskNone = 0, kAttnMaskBool = 1, kAttnMaskAdditive = 2 };

// The mask as a strided [B, H, L, S] view (strides 0 where broadcast); an
// additive mask has the operands' storage type.
struct AttentionMaskArg {
  const void* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 0};
  int kind = kAttnMaskNone;
};

// One launch's problem: B * H independent problems of L queries and S keys.
struct AttentionArgs {
  int64_t heads = 1, len_q = 0, len_k = 0;
  int dim_qk = 0, dim_v = 0;
  double scale = 1;
  bool is_causal = false;
  AttentionMaskArg mask;
  double dropout_p = 0;  // > 0: probabilities dropped as AttentionParams (kernels/runtime.h) says
  uint64_t seed = 0, offset = 0;
};

template <typename C> __device__ __forceinline__ C attention_inf() { return C(INFINITY); }

// The score of query i and key j of problem n given their dot product:
// dot * scale, -inf where the causal rule or a bool mask forbids the pair,
// plus an additive mask's value.
template <typename T, typename C>
__device__ __forceinline__ C attention_score(C dot, const AttentionArgs& a, int64_t n, int64_t i, int64_t j) {
  if (a.is_causal && j > i) return -attention_inf<C>();
  C s = dot * static_cast<C>(a.scale);
  if (a.mask.kind != kAttnMaskNone) {
    const AttentionMaskArg& m = a.mask;
    const int64_t off = (n / a.heads) * m.stride[0] + (n % a.heads) * m.stride[1] + i * m.stride[2] + j * m.stride[3];
    if (m.kind == kAttnMaskBool) {
      if (!static_cast<const bool*>(m.data)[off]) return -attention_inf<C>();
    } else {
      s += cast<C>(static_cast<const T*>(m.data)[off]);
    }
  }
  return s;
}

// What dropout multiplies the probability of query i and key j of problem n
// by: 1 / (1 - p) if kept, 0 if dropped, 1 without dropout. The decision is
// the dropout op's for element (n * L + i) * S + j of the [B * H, L, S]
// weights, so the fused kernels drop what the composed path would.
template <typename C>
__device__ __forceinline__ C attention_dropout_factor(const AttentionArgs& a, int64_t n, int64_t i, int64_t j) {
  if (a.dropout_p <= 0) return C(1);
  const auto index = static_cast<uint64_t>((n * a.len_q + i) * a.len_k + j);
  return philox::keep_at(a.seed, a.offset, index, a.dropout_p) ? static_cast<C>(1.0 / (1.0 - a.dropout_p)) : C(0);
}

// The backward's two numbers for query i and key j, recomputed from their
// rows in shared memory: the dropped probability P_ij * M_ij (what the
// forward multiplied v_j by: dV's weight) and dS_ij = P_ij (dP_ij M_ij - D_i),
// with P_ij = exp(score - lse_i) (0 when masked or when lse_i is +inf) and
// dP_ij = dO_i . v_j. Both backward kernels call this, one per (i, j) a lane owns.
template <typename C> struct AttentionGradTerms { C dropped_p, ds; };
template <typename T, typename C>
__device__ __forceinline__ AttentionGradTerms<C> attention_grad_terms(const C* q_row, const C* k_row, const C* do_row,
                                                                      const C* v_row, C lse_i, C d_i,
                                                                      const AttentionArgs& a, int64_t n, int64_t i,
                                                                      int64_t j) {
  C dot = 0, dp = 0;
  for (int e = 0; e < a.dim_qk; ++e) dot += q_row[e] * k_row[e];
  for (int e = 0; e < a.dim_v; ++e) dp += do_row[e] * v_row[e];
  const C p = exp(attention_score<T>(dot, a, n, i, j) - lse_i);
  const C factor = attention_dropout_factor<C>(a, n, i, j);
  return {p * factor, p * (dp * factor - d_i)};
}

// dst[r * ld + c] = src[(first + r) * cols + c] as C for r < rows, c < cols;
// rows past `total` are zero (so every shared element a kernel reads was
// written). Every thread of the block takes part; call __syncthreads() after.
template <typename T, typename C>
__device__ __forceinline__ void load_rows(C* dst, int ld, const T* src, int64_t first, int rows, int64_t total,
                                          int cols) {
  for (int idx = threadIdx.x; idx < rows * cols; idx += blockDim.x) {
    const int r = idx / cols, c = idx % cols;
    const int64_t row = first + r;
    dst[r * ld + c] = row < total ? cast<C>(src[row * cols + c]) : C(0);
  }
}

}  // namespace anvil::cuda::dev
