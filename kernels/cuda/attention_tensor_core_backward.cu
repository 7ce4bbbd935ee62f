// Fused attention backward on tensor cores (bfloat16 / float16), the
// FlashAttention-2 backward as two kernels that each own what they write (no
// atomics, deterministic), recomputing the probabilities from the forward's
// log-sum-exp: P = exp(score - lse), dP = dO V^T, dS = P (dP - D) with
// D = rowsum(dO * O) (attention.cu computes D before calling these).
//
//   dQ     one block per 64 queries (a warp: 16), streaming 64-key tiles:
//          S = Q K^T, dP = dO V^T (warp_mma_nt), then dQ += dS K (warp_mma_nn)
//   dK dV  one block per 64 keys (a warp: 16), streaming 64-query tiles with
//          their lse and D: S^T = K Q^T, dP^T = V dO^T, then dV += P^T dO and
//          dK += dS^T Q
//
// The products are device/attention_mma.cuh's; the per-element rules (scale,
// masks, causality, dropout) are device/attention_tile.cuh's, as in every
// other attention kernel. dS is rounded to 16 bits before its products, as
// P is in the forward. Causal: a key tile starts at the query tile of its
// first key (earlier queries see none of its keys), a query tile stops at
// its last query.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/attention_tensor_core.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/device/attention_mma.cuh"
#include "kernels/cuda/device/dynamic_shared.cuh"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"

namespace anvil::cuda {
namespace {

using dev::AttentionArgs;
namespace mma = dev::attention_mma;
using mma::kRows;
using mma::kThreads;
using mma::kTile;
using mma::kTileN8;

static_assert(kRows == kTile, "the causal tile skipping below assumes query and key tiles of one size");

template <typename T, int kDim>
__global__ void __launch_bounds__(kThreads)
    attention_dq_tensor_core_kernel(T* grad_q, const T* q, const T* k, const T* v, const T* grad_out, const float* lse,
                                    const float* row_dot, AttentionArgs a, int64_t q_tiles) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  constexpr int S = mma::kStride<kDim>;
  uint16_t* qs = dev::dynamic_shared<uint16_t>();
  uint16_t* dos = qs + kRows * S;
  uint16_t* ks = dos + kRows * S;
  uint16_t* vs = ks + kTile * S;

  const int E = a.dim_qk, Ev = a.dim_v;
  const int64_t n = blockIdx.x / q_tiles, i0 = (blockIdx.x % q_tiles) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, qd = lane % 4;
  q += n * a.len_q * E;
  grad_out += n * a.len_q * Ev;
  k += n * a.len_k * E;
  v += n * a.len_k * Ev;
  mma::copy_tile<kDim>(qs, q, i0, kRows, a.len_q, E);
  mma::copy_tile<kDim>(dos, grad_out, i0, kRows, a.len_q, Ev);
  dev::cp_async_commit();

  const int64_t row[2] = {i0 + warp * 16 + lane / 4, i0 + warp * 16 + lane / 4 + 8};
  float row_lse[2], row_d[2];
  for (int h = 0; h < 2; ++h) {
    row_lse[h] = row[h] < a.len_q ? lse[n * a.len_q + row[h]] : INFINITY;  // +inf: no probability
    row_d[h] = row[h] < a.len_q ? row_dot[n * a.len_q + row[h]] : 0.f;
  }
  float dq[kDim / 8][4];
  mma::zero(dq);

  const int64_t key_end = a.is_causal && i0 + kRows < a.len_k ? i0 + kRows : a.len_k;
  for (int64_t j0 = 0; j0 < key_end; j0 += kTile) {
    __syncthreads();
    mma::copy_tile<kDim>(ks, k, j0, kTile, a.len_k, E);
    mma::copy_tile<kDim>(vs, v, j0, kTile, a.len_k, Ev);
    dev::cp_async_commit();
    dev::cp_async_wait<0>();
    __syncthreads();

    float s[kTileN8][4], dp[kTileN8][4];
    mma::zero(s);
    mma::zero(dp);
    mma::warp_mma_nt<T, kDim>(s, qs + warp * 16 * S, ks);
    mma::warp_mma_nt<T, kDim>(dp, dos + warp * 16 * S, vs);
#pragma unroll
    for (int t = 0; t < kTileN8; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e / 2;
        const int64_t j = j0 + 8 * t + 2 * qd + e % 2;
        const bool in = j < a.len_k && row[h] < a.len_q;
        const float p = in ? expf(dev::attention_score<T>(s[t][e], a, n, row[h], j) - row_lse[h]) : 0.f;
        const float factor = p != 0.f ? dev::attention_dropout_factor<float>(a, n, row[h], j) : 0.f;
        dp[t][e] = p * (dp[t][e] * factor - row_d[h]);  // dS
      }
    }
    mma::warp_mma_nn<T, kDim>(dq, dp, ks);
  }
  const float scale[2] = {static_cast<float>(a.scale), static_cast<float>(a.scale)};
  mma::store_rows<T, kDim>(grad_q + n * a.len_q * E, dq, i0 + warp * 16, a.len_q, E, scale);
#else
  __trap();
#endif
}

template <typename T, int kDim>
__global__ void __launch_bounds__(kThreads)
    attention_dkdv_tensor_core_kernel(T* grad_k, T* grad_v, const T* q, const T* k, const T* v, const T* grad_out,
                                      const float* lse, const float* row_dot, AttentionArgs a, int64_t k_tiles) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  constexpr int S = mma::kStride<kDim>;
  uint16_t* ks = dev::dynamic_shared<uint16_t>();
  uint16_t* vs = ks + kRows * S;
  uint16_t* qs = vs + kRows * S;
  uint16_t* dos = qs + kTile * S;
  float* tile_lse = reinterpret_cast<float*>(dos + kTile * S);
  float* tile_d = tile_lse + kTile;

  const int E = a.dim_qk, Ev = a.dim_v;
  const int64_t n = blockIdx.x / k_tiles, j0 = (blockIdx.x % k_tiles) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, qd = lane % 4;
  q += n * a.len_q * E;
  grad_out += n * a.len_q * Ev;
  k += n * a.len_k * E;
  v += n * a.len_k * Ev;
  lse += n * a.len_q;
  row_dot += n * a.len_q;
  mma::copy_tile<kDim>(ks, k, j0, kRows, a.len_k, E);
  mma::copy_tile<kDim>(vs, v, j0, kRows, a.len_k, Ev);
  dev::cp_async_commit();

  const int64_t key[2] = {j0 + warp * 16 + lane / 4, j0 + warp * 16 + lane / 4 + 8};  // this lane's rows
  float dk[kDim / 8][4], dv[kDim / 8][4];
  mma::zero(dk);
  mma::zero(dv);

  for (int64_t i0 = a.is_causal ? j0 : 0; i0 < a.len_q; i0 += kTile) {
    __syncthreads();
    mma::copy_tile<kDim>(qs, q, i0, kTile, a.len_q, E);
    mma::copy_tile<kDim>(dos, grad_out, i0, kTile, a.len_q, Ev);
    dev::cp_async_commit();
    for (int r = threadIdx.x; r < kTile; r += blockDim.x) {
      tile_lse[r] = i0 + r < a.len_q ? lse[i0 + r] : INFINITY;
      tile_d[r] = i0 + r < a.len_q ? row_dot[i0 + r] : 0.f;
    }
    dev::cp_async_wait<0>();
    __syncthreads();

    float p[kTileN8][4], ds[kTileN8][4];  // rows: this warp's keys; columns: the tile's queries
    mma::zero(p);
    mma::zero(ds);
    mma::warp_mma_nt<T, kDim>(p, ks + warp * 16 * S, qs);  // S^T = K Q^T
    mma::warp_mma_nt<T, kDim>(ds, vs + warp * 16 * S, dos);  // dP^T = V dO^T
#pragma unroll
    for (int t = 0; t < kTileN8; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t j = key[e / 2];
        const int c = 8 * t + 2 * qd + e % 2;
        const int64_t i = i0 + c;
        const bool in = i < a.len_q && j < a.len_k;
        const float prob = in ? expf(dev::attention_score<T>(p[t][e], a, n, i, j) - tile_lse[c]) : 0.f;
        const float factor = prob != 0.f ? dev::attention_dropout_factor<float>(a, n, i, j) : 0.f;
        ds[t][e] = prob * (ds[t][e] * factor - tile_d[c]);
        p[t][e] = prob * factor;  // what the forward multiplied v_j by
      }
    }
    mma::warp_mma_nn<T, kDim>(dv, p, dos);  // dV += P^T dO
    mma::warp_mma_nn<T, kDim>(dk, ds, qs);  // dK += dS^T Q
  }
  const float scale[2] = {static_cast<float>(a.scale), static_cast<float>(a.scale)}, one[2] = {1.f, 1.f};
  mma::store_rows<T, kDim>(grad_k + n * a.len_k * E, dk, j0 + warp * 16, a.len_k, E, scale);
  mma::store_rows<T, kDim>(grad_v + n * a.len_k * Ev, dv, j0 + warp * 16, a.len_k, Ev, one);
#else
  __trap();
#endif
}

template <typename T, int kDim>
void launch(void* grad_q, void* grad_k, void* grad_v, const void* q, const void* k, const void* v, const void* grad_out,
            const float* lse, const float* row_dot, const AttentionArgs& a, int64_t problems, cudaStream_t s) {
  constexpr int tiles_bytes = 4 * kTile * mma::kStride<kDim> * 2;
  const auto* tq = static_cast<const T*>(q);
  const auto* tk = static_cast<const T*>(k);
  const auto* tv = static_cast<const T*>(v);
  const auto* tgo = static_cast<const T*>(grad_out);
  if (a.len_q > 0) {
    auto* kernel = attention_dq_tensor_core_kernel<T, kDim>;
    allow_tensor_core_shared(reinterpret_cast<const void*>(kernel), tiles_bytes);
    const int64_t q_tiles = ceil_div(a.len_q, kRows);
    launch_kernel(kernel, attention_tensor_core_grid(problems, q_tiles), kThreads, tiles_bytes, s)(
        static_cast<T*>(grad_q), tq, tk, tv, tgo, lse, row_dot, a, q_tiles);
    ANVIL_CUDA_CHECK_LAUNCH("attention_dq_tensor_core_kernel");
  }
  if (a.len_k > 0) {
    auto* kernel = attention_dkdv_tensor_core_kernel<T, kDim>;
    constexpr int bytes = tiles_bytes + 2 * kTile * static_cast<int>(sizeof(float));
    allow_tensor_core_shared(reinterpret_cast<const void*>(kernel), bytes);
    const int64_t k_tiles = ceil_div(a.len_k, kRows);
    launch_kernel(kernel, attention_tensor_core_grid(problems, k_tiles), kThreads, bytes, s)(
        static_cast<T*>(grad_k), static_cast<T*>(grad_v), tq, tk, tv, tgo, lse, row_dot, a, k_tiles);
    ANVIL_CUDA_CHECK_LAUNCH("attention_dkdv_tensor_core_kernel");
  }
}

}  // namespace

bool attention_backward_tensor_core(DType dtype, void* grad_q, void* grad_k, void* grad_v, const void* q, const void* k,
                                    const void* v, const void* grad_out, const float* lse, const float* row_dot,
                                    const AttentionArgs& a, int64_t problems, cudaStream_t s) {
  if (!attention_tensor_cores_take(dtype, a.dim_qk, a.dim_v, {grad_q, grad_k, grad_v, q, k, v, grad_out})) return false;
  if (problems == 0) return true;
  const bool wide = a.dim_qk > 64 || a.dim_v > 64;
  if (dtype == kBFloat16) {
    (wide ? launch<__nv_bfloat16, 128> : launch<__nv_bfloat16, 64>)(grad_q, grad_k, grad_v, q, k, v, grad_out, lse,
                                                                    row_dot, a, problems, s);
  } else {
    (wide ? launch<__half, 128> : launch<__half, 64>)(grad_q, grad_k, grad_v, q, k, v, grad_out, lse, row_dot, a,
                                                      problems, s);
  }
  return true;
}

}  // namespace anvil::cuda
