// Fused attention forward on tensor cores (bfloat16 / float16), FlashAttention-2's
// schedule with mma.sync m16n8k16 (the warp products: device/attention_mma.cuh):
//
//   one block per (problem, tile of 64 queries); 4 warps, each owns 16 query
//   rows for the whole key loop. Per tile of 64 keys:
//     S = Q K^T    the warp's 16 x 64 scores (warp_mma_nt)
//     softmax      each lane holds rows g and g + 8 at 16 columns; a row's
//                  max is reduced over its quad (two shuffles); its sum stays
//                  per lane until the end (the quad rescales it alike)
//     O += P V     P straight from the score registers (warp_mma_nn)
//   K and V arrive by cp.async as two groups, so V's copy overlaps S and the
//   softmax. The output is O / l, and the log-sum-exp m + log(l) per row.
//
// Masks, causality, scale and dropout are the other kernel's per-element
// rules (device/attention_tile.cuh) applied to the accumulator registers, so
// both kernels compute one function; they differ by rounding: here P is
// rounded to 16 bits before P V, and tensor cores add in their own order.
//
// Head dims up to 128 in multiples of 8, the tiles zero-padded to 64 or 128
// columns (zero columns add nothing to Q K^T; the extra output columns are
// not written). The backward: attention_tensor_core_backward.cu.
#include "kernels/cuda/attention_tensor_core.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

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

template <typename T, int kDim>
__global__ void __launch_bounds__(kThreads)
    attention_forward_tensor_core_kernel(T* out, float* lse, const T* q, const T* k, const T* v, AttentionArgs a,
                                         int64_t q_tiles) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  constexpr int S = mma::kStride<kDim>;
  uint16_t* qs = dev::dynamic_shared<uint16_t>();  // 16-bit values as raw bits
  uint16_t* ks = qs + kRows * S;
  uint16_t* vs = ks + kTile * S;

  const int E = a.dim_qk, Ev = a.dim_v;
  const int64_t n = blockIdx.x / q_tiles, i0 = (blockIdx.x % q_tiles) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, qd = lane % 4;
  q += n * a.len_q * E;
  k += n * a.len_k * E;
  v += n * a.len_k * Ev;
  mma::copy_tile<kDim>(qs, q, i0, kRows, a.len_q, E);
  dev::cp_async_commit();

  const int64_t row[2] = {i0 + warp * 16 + lane / 4, i0 + warp * 16 + lane / 4 + 8};  // this lane's rows
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  float o[kDim / 8][4];
  mma::zero(o);

  // Causal: keys past the block's last query are masked for all of its rows.
  const int64_t key_end = a.is_causal && i0 + kRows < a.len_k ? i0 + kRows : a.len_k;
  for (int64_t j0 = 0; j0 < key_end; j0 += kTile) {
    __syncthreads();  // every warp is done with the previous K and V
    mma::copy_tile<kDim>(ks, k, j0, kTile, a.len_k, E);
    dev::cp_async_commit();
    mma::copy_tile<kDim>(vs, v, j0, kTile, a.len_k, Ev);
    dev::cp_async_commit();
    dev::cp_async_wait<1>();  // Q and K landed (V may still be in flight)
    __syncthreads();

    float s[kTileN8][4];
    mma::zero(s);
    mma::warp_mma_nt<T, kDim>(s, qs + warp * 16 * S, ks);

    // s[t][e]: row h = e / 2, key j0 + 8t + 2qd + e % 2.
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int t = 0; t < kTileN8; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e / 2;
        const int64_t j = j0 + 8 * t + 2 * qd + e % 2;
        // Rows past L score -inf without reading the mask (its rows end at L).
        s[t][e] = j < a.len_k && row[h] < a.len_q ? dev::attention_score<T>(s[t][e], a, n, row[h], j) : -INFINITY;
        tile_max[h] = fmaxf(tile_max[h], s[t][e]);
      }
    }
    float rescale[2];
    for (int h = 0; h < 2; ++h) {
      const float new_max = fmaxf(m[h], mma::quad_max(tile_max[h]));
      // A row with no allowed key so far keeps p = 0 and its (zero) state.
      rescale[h] = new_max == -INFINITY ? 1.f : expf(m[h] - new_max);
      m[h] = new_max;
      l[h] *= rescale[h];
    }
#pragma unroll
    for (int t = 0; t < kTileN8; ++t) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e / 2;
        const float p = m[h] == -INFINITY ? 0.f : expf(s[t][e] - m[h]);
        l[h] += p;  // dropout comes after the row sum, as in the other kernel
        const int64_t j = j0 + 8 * t + 2 * qd + e % 2;
        s[t][e] = p != 0.f ? p * dev::attention_dropout_factor<float>(a, n, row[h], j) : 0.f;
      }
    }
#pragma unroll
    for (int t = 0; t < kDim / 8; ++t)
      for (int e = 0; e < 4; ++e) o[t][e] *= rescale[e / 2];

    dev::cp_async_wait<0>();  // V landed
    __syncthreads();
    mma::warp_mma_nn<T, kDim>(o, s, vs);
  }

  float inv[2];
  for (int h = 0; h < 2; ++h) {
    const float sum = mma::quad_sum(l[h]);
    // No allowed key: output 0 and lse +inf, so the backward gives it zero probabilities.
    inv[h] = sum > 0.f ? 1.f / sum : 0.f;
    if (qd == 0 && row[h] < a.len_q) lse[n * a.len_q + row[h]] = sum > 0.f ? m[h] + logf(sum) : INFINITY;
  }
  mma::store_rows<T, kDim>(out + n * a.len_q * Ev, o, i0 + warp * 16, a.len_q, Ev, inv);
#else
  __trap();  // not built for sm_80+: the host checks the device before launching
#endif
}

template <typename T, int kDim>
void launch(void* out, float* lse, const void* q, const void* k, const void* v, const AttentionArgs& a,
            int64_t problems, cudaStream_t s) {
  auto* kernel = attention_forward_tensor_core_kernel<T, kDim>;
  constexpr int bytes = (kRows + 2 * kTile) * mma::kStride<kDim> * 2;
  allow_tensor_core_shared(reinterpret_cast<const void*>(kernel), bytes);
  const int64_t q_tiles = ceil_div(a.len_q, kRows);
  launch_kernel(kernel, attention_tensor_core_grid(problems, q_tiles), kThreads, bytes, s)(
      static_cast<T*>(out), lse, static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), a,
      q_tiles);
  ANVIL_CUDA_CHECK_LAUNCH("attention_forward_tensor_core_kernel");
}

}  // namespace

// Read at every call (a getenv beside a launch costs nothing) so a test or a
// benchmark can switch kernels within one process.
bool attention_tensor_cores_take(DType dtype, int dim_qk, int dim_v, std::initializer_list<const void*> operands) {
  if (dtype != kBFloat16 && dtype != kFloat16) return false;
  const auto dim_ok = [](int d) { return d > 0 && d <= 128 && d % mma::kChunk == 0; };
  if (!dim_ok(dim_qk) || !dim_ok(dim_v)) return false;
  for (const void* p : operands)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  const char* env = std::getenv("ANVIL_ATTENTION_TENSOR_CORES");
  if (env != nullptr && std::strcmp(env, "0") == 0) return false;
  int device = 0, major = 0;
  ANVIL_CUDA_CHECK(cudaGetDevice(&device));
  ANVIL_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 8;
}

void allow_tensor_core_shared(const void* kernel, int bytes) {
  if (bytes > 48 * 1024)
    ANVIL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

unsigned attention_tensor_core_grid(int64_t problems, int64_t tiles) {
  const int64_t blocks = problems * tiles;
  ANVIL_CHECK(blocks < (int64_t(1) << 31), "attention: too many (batch * head, tile) blocks for one launch: ", blocks);
  return static_cast<unsigned>(blocks);
}

bool attention_forward_tensor_core(DType dtype, void* out, float* lse, const void* q, const void* k, const void* v,
                                   const AttentionArgs& a, int64_t problems, cudaStream_t s) {
  if (!attention_tensor_cores_take(dtype, a.dim_qk, a.dim_v, {out, q, k, v})) return false;
  if (problems * a.len_q == 0) return true;  // nothing to write
  const bool wide = a.dim_qk > 64 || a.dim_v > 64;
  if (dtype == kBFloat16) {
    wide ? launch<__nv_bfloat16, 128>(out, lse, q, k, v, a, problems, s)
         : launch<__nv_bfloat16, 64>(out, lse, q, k, v, a, problems, s);
  } else {
    wide ? launch<__half, 128>(out, lse, q, k, v, a, problems, s)
         : launch<__half, 64>(out, lse, q, k, v, a, problems, s);
  }
  return true;
}

}  // namespace anvil::cuda
