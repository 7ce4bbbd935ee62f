// Fused attention on CUDA, flash-attention style (FlashAttention-2's
// recurrences in plain CUDA C++, no tensor cores; bfloat16 and float16 go to
// attention_tensor_core*.cu instead when those kernels take the shapes):
//
// forward   one block per (problem, tile of kRows queries); a warp owns
//           kRowsPerWarp query rows. K/V tiles of kKeys rows are staged in
//           shared memory; lane j scores key j of the tile, the warp keeps
//           each row's running max and sum (online softmax) and lane d its
//           output dims d, d + 32, ... in registers. Writes out and each
//           row's log-sum-exp. The probabilities pass from the lane that
//           computed them to the lanes that use them through shared memory,
//           behind a __syncthreads (one per tile, not a __syncwarp per row:
//           the emulator's racecheck honours block barriers only).
// backward  D = rowsum(dO * O) (one warp per row); then dQ with the forward's
//           layout (per query tile, streaming K/V), and dK/dV transposed (per
//           key tile, streaming Q/dO; lane i takes query i). Each output is
//           owned by one block: no atomics, deterministic, racecheck-clean,
//           at the price of computing the probabilities twice.
//
// Dropout (AttentionParams::dropout_p > 0) multiplies each probability by its
// Philox factor after the row sums (forward) and in dV and dP (backward),
// recomputing the mask each time (dev::attention_dropout_factor).
//
// Math in acc_t (float for float32 and 16-bit, double for float64). For
// float64 the backward recomputes the log-sum-exp in double (the forward
// kernel without its output) instead of using the saved float32 one.
// Shared memory grows with the head dim (at most 256): above 48 KiB the
// kernel is allowed more with cudaFuncSetAttribute.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/base/error.h"
#include "kernels/cuda/attention_choice_run.h"
#include "kernels/cuda/attention_tensor_core.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/attention_kernels.h"
#include "kernels/cuda/device/attention_tile.cuh"
#include "kernels/cuda/device/dynamic_shared.cuh"
#include "kernels/cuda/device/kernel_kit.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/shapes/attention_checks.h"

namespace anvil::cuda {
namespace {

using dev::AttentionArgs;
using kit::acc_t;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 4;
constexpr int kRows = kWarps * kRowsPerWarp;  // queries (forward, dQ) or keys (dK/dV) a block owns
constexpr int kKeys = 32;  // rows of a streamed tile: one per lane
constexpr int kMaxHeadDim = 256;
constexpr int kDimsPerLane = kMaxHeadDim / 32;

template <typename C> __device__ __forceinline__ C inf() { return dev::attention_inf<C>(); }
template <typename C> __device__ __forceinline__ C larger(C a, C b) { return a > b ? a : b; }
__device__ __forceinline__ int64_t key_limit(const AttentionArgs& a, int64_t i0) {
  return a.is_causal && i0 + kRows < a.len_k ? i0 + kRows
                                             : a.len_k;  // causal: keys past the tile's last query are masked
}

// ---------------------------------------------------------------- forward
// Shared: q [kRows][E], k [kKeys][E + 1] (padded: lane j reads row j), v [kKeys][Ev], p [kRows][kKeys].
// Each tile is two phases split by a barrier: every warp scores its rows
// (p to shared memory), then every lane accumulates p @ v for its dims.
// With out == nullptr only lse is written (float64's exact lse for the backward).
template <typename T, typename L>
__global__ void attention_forward_kernel(T* out, L* lse, const T* q, const T* k, const T* v, AttentionArgs a,
                                         int64_t q_tiles) {
  using C = acc_t<T>;
  const int E = a.dim_qk, Ev = a.dim_v;
  const int64_t n = blockIdx.x / q_tiles, i0 = (blockIdx.x % q_tiles) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  C* qs = dev::dynamic_shared<C>();
  C* ks = qs + kRows * E;
  C* vs = ks + kKeys * (E + 1);
  C* ps = vs + kKeys * Ev;
  q += n * a.len_q * E;
  k += n * a.len_k * E;
  v += n * a.len_k * Ev;
  dev::load_rows(qs, E, q, i0, kRows, a.len_q, E);

  C m[kRowsPerWarp], l[kRowsPerWarp], rescale[kRowsPerWarp], acc[kRowsPerWarp][kDimsPerLane];
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    m[rr] = -inf<C>();
    l[rr] = C(0);
    for (int t = 0; t < kDimsPerLane; ++t) acc[rr][t] = C(0);
  }
  const int64_t key_end = key_limit(a, i0);
  for (int64_t j0 = 0; j0 < key_end; j0 += kKeys) {
    __syncthreads();  // everyone is done with the previous tile
    dev::load_rows(ks, E + 1, k, j0, kKeys, a.len_k, E);
    dev::load_rows(vs, Ev, v, j0, kKeys, a.len_k, Ev);
    __syncthreads();
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      const int64_t i = i0 + r, j = j0 + lane;
      if (i >= a.len_q) break;  // uniform over the warp
      C s = -inf<C>();
      if (j < a.len_k) {
        C dot = 0;
        for (int e = 0; e < E; ++e) dot += qs[r * E + e] * ks[lane * (E + 1) + e];
        s = dev::attention_score<T>(dot, a, n, i, j);
      }
      const C new_max = larger(m[rr], kit::warp_max(s));
      // A row with no allowed key so far keeps p = 0 and its (zero) state.
      const C p = new_max == -inf<C>() ? C(0) : exp(s - new_max);
      rescale[rr] = new_max == -inf<C>() ? C(1) : exp(m[rr] - new_max);
      l[rr] = l[rr] * rescale[rr] + kit::warp_sum(p);
      m[rr] = new_max;
      // Dropout after the row sum: the output accumulates only kept keys.
      ps[r * kKeys + lane] = j < a.len_k ? p * dev::attention_dropout_factor<C>(a, n, i, j) : p;
    }
    __syncthreads();  // the warp's p rows are complete (the loop's first barrier guards their reuse)
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      if (i0 + r >= a.len_q) break;
      for (int t = 0; t < kDimsPerLane; ++t) {
        const int d = lane + 32 * t;
        if (d >= Ev) break;
        C sum = 0;
        for (int jj = 0; jj < kKeys; ++jj) sum += ps[r * kKeys + jj] * vs[jj * Ev + d];
        acc[rr][t] = acc[rr][t] * rescale[rr] + sum;
      }
    }
  }
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t i = i0 + warp * kRowsPerWarp + rr;
    if (i >= a.len_q) break;
    // No allowed key: output 0 and lse +inf, so the backward gives it zero probabilities.
    const C inv = l[rr] > C(0) ? C(1) / l[rr] : C(0);
    if (out) {
      for (int t = 0; t < kDimsPerLane; ++t) {
        const int d = lane + 32 * t;
        if (d < Ev) out[(n * a.len_q + i) * Ev + d] = dev::cast<T>(acc[rr][t] * inv);
      }
    }
    if (lane == 0) lse[n * a.len_q + i] = static_cast<L>(l[rr] > C(0) ? m[rr] + log(l[rr]) : inf<C>());
  }
}

// ---------------------------------------------------------------- backward
// D[row] = sum_d dO[row, d] * O[row, d]: one warp per row.
template <typename T>
__global__ void attention_row_dot_kernel(acc_t<T>* d_out, const T* grad_out, const T* out, int64_t rows, int dim) {
  using C = acc_t<T>;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (row >= rows) return;  // uniform over the warp
  const int lane = threadIdx.x % 32;
  C sum = 0;
  for (int d = lane; d < dim; d += 32) sum += dev::cast<C>(grad_out[row * dim + d]) * dev::cast<C>(out[row * dim + d]);
  sum = kit::warp_sum(sum);
  if (lane == 0) d_out[row] = sum;
}

// dQ_i = scale * sum_j P_ij (dP_ij - D_i) k_j, per query tile as the forward.
// Shared: q [kRows][E], dO [kRows][Ev], k [kKeys][E + 1], v [kKeys][Ev + 1], ds [kRows][kKeys];
// two phases per tile as the forward.
template <typename T>
__global__ void attention_dq_kernel(T* grad_q, const T* q, const T* k, const T* v, const T* grad_out,
                                    const acc_t<T>* lse, const acc_t<T>* row_d, AttentionArgs a, int64_t q_tiles) {
  using C = acc_t<T>;
  const int E = a.dim_qk, Ev = a.dim_v;
  const int64_t n = blockIdx.x / q_tiles, i0 = (blockIdx.x % q_tiles) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  C* qs = dev::dynamic_shared<C>();
  C* dos = qs + kRows * E;
  C* ks = dos + kRows * Ev;
  C* vs = ks + kKeys * (E + 1);
  C* dss = vs + kKeys * (Ev + 1);
  q += n * a.len_q * E;
  grad_out += n * a.len_q * Ev;
  k += n * a.len_k * E;
  v += n * a.len_k * Ev;
  lse += n * a.len_q;
  row_d += n * a.len_q;
  dev::load_rows(qs, E, q, i0, kRows, a.len_q, E);
  dev::load_rows(dos, Ev, grad_out, i0, kRows, a.len_q, Ev);

  C acc[kRowsPerWarp][kDimsPerLane];
  for (int rr = 0; rr < kRowsPerWarp; ++rr)
    for (int t = 0; t < kDimsPerLane; ++t) acc[rr][t] = C(0);
  const int64_t key_end = key_limit(a, i0);
  for (int64_t j0 = 0; j0 < key_end; j0 += kKeys) {
    __syncthreads();
    dev::load_rows(ks, E + 1, k, j0, kKeys, a.len_k, E);
    dev::load_rows(vs, Ev + 1, v, j0, kKeys, a.len_k, Ev);
    __syncthreads();
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      const int64_t i = i0 + r, j = j0 + lane;
      if (i >= a.len_q) break;  // uniform over the warp
      C ds = 0;
      if (j < a.len_k)
        ds = dev::attention_grad_terms<T>(qs + r * E, ks + lane * (E + 1), dos + r * Ev, vs + lane * (Ev + 1), lse[i],
                                          row_d[i], a, n, i, j)
                 .ds;
      dss[r * kKeys + lane] = ds;
    }
    __syncthreads();
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      if (i0 + r >= a.len_q) break;
      for (int t = 0; t < kDimsPerLane; ++t) {
        const int d = lane + 32 * t;
        if (d >= E) break;
        C sum = 0;
        for (int jj = 0; jj < kKeys; ++jj) sum += dss[r * kKeys + jj] * ks[jj * (E + 1) + d];
        acc[rr][t] += sum;
      }
    }
  }
  const C scale = static_cast<C>(a.scale);
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t i = i0 + warp * kRowsPerWarp + rr;
    if (i >= a.len_q) break;
    for (int t = 0; t < kDimsPerLane; ++t) {
      const int d = lane + 32 * t;
      if (d < E) grad_q[(n * a.len_q + i) * E + d] = dev::cast<T>(acc[rr][t] * scale);
    }
  }
}

// dV_j = sum_i P_ij dO_i and dK_j = scale * sum_i P_ij (dP_ij - D_i) q_i, per
// key tile (a warp owns kRowsPerWarp keys), streaming query tiles (lane i: query i).
// Shared: k [kRows][E], v [kRows][Ev], q [kKeys][E + 1], dO [kKeys][Ev + 1],
// lse and D [kKeys] each, p and ds [kRows][kKeys] each; two phases per tile.
template <typename T>
__global__ void attention_dkdv_kernel(T* grad_k, T* grad_v, const T* q, const T* k, const T* v, const T* grad_out,
                                      const acc_t<T>* lse, const acc_t<T>* row_d, AttentionArgs a, int64_t k_tiles) {
  using C = acc_t<T>;
  const int E = a.dim_qk, Ev = a.dim_v;
  const int64_t n = blockIdx.x / k_tiles, j0 = (blockIdx.x % k_tiles) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  C* ks = dev::dynamic_shared<C>();
  C* vs = ks + kRows * E;
  C* qs = vs + kRows * Ev;
  C* dos = qs + kKeys * (E + 1);
  C* lses = dos + kKeys * (Ev + 1);
  C* ds_row = lses + kKeys;
  C* pw = ds_row + kKeys;
  C* dsw = pw + kRows * kKeys;
  q += n * a.len_q * E;
  grad_out += n * a.len_q * Ev;
  k += n * a.len_k * E;
  v += n * a.len_k * Ev;
  lse += n * a.len_q;
  row_d += n * a.len_q;
  dev::load_rows(ks, E, k, j0, kRows, a.len_k, E);
  dev::load_rows(vs, Ev, v, j0, kRows, a.len_k, Ev);

  C dk[kRowsPerWarp][kDimsPerLane], dv[kRowsPerWarp][kDimsPerLane];
  for (int rr = 0; rr < kRowsPerWarp; ++rr)
    for (int t = 0; t < kDimsPerLane; ++t) dk[rr][t] = dv[rr][t] = C(0);
  // Causal: queries before j0 see none of these keys.
  const int64_t first_query = a.is_causal ? j0 / kKeys * kKeys : 0;
  for (int64_t i0 = first_query; i0 < a.len_q; i0 += kKeys) {
    __syncthreads();
    dev::load_rows(qs, E + 1, q, i0, kKeys, a.len_q, E);
    dev::load_rows(dos, Ev + 1, grad_out, i0, kKeys, a.len_q, Ev);
    if (threadIdx.x < kKeys) {
      const int64_t i = i0 + threadIdx.x;
      lses[threadIdx.x] = i < a.len_q ? lse[i] : inf<C>();  // an absent query has zero probability
      ds_row[threadIdx.x] = i < a.len_q ? row_d[i] : C(0);
    }
    __syncthreads();
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      const int64_t j = j0 + r, i = i0 + lane;
      if (j >= a.len_k) break;  // uniform over the warp
      dev::AttentionGradTerms<C> t{C(0), C(0)};
      if (i < a.len_q)
        t = dev::attention_grad_terms<T>(qs + lane * (E + 1), ks + r * E, dos + lane * (Ev + 1), vs + r * Ev,
                                         lses[lane], ds_row[lane], a, n, i, j);
      pw[r * kKeys + lane] = t.dropped_p;
      dsw[r * kKeys + lane] = t.ds;
    }
    __syncthreads();
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      if (j0 + r >= a.len_k) break;
      for (int t = 0; t < kDimsPerLane; ++t) {
        const int d = lane + 32 * t;
        if (d < Ev) {
          C sum = 0;
          for (int ii = 0; ii < kKeys; ++ii) sum += pw[r * kKeys + ii] * dos[ii * (Ev + 1) + d];
          dv[rr][t] += sum;
        }
        if (d < E) {
          C sum = 0;
          for (int ii = 0; ii < kKeys; ++ii) sum += dsw[r * kKeys + ii] * qs[ii * (E + 1) + d];
          dk[rr][t] += sum;
        }
      }
    }
  }
  const C scale = static_cast<C>(a.scale);
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t j = j0 + warp * kRowsPerWarp + rr;
    if (j >= a.len_k) break;
    for (int t = 0; t < kDimsPerLane; ++t) {
      const int d = lane + 32 * t;
      if (d < E) grad_k[(n * a.len_k + j) * E + d] = dev::cast<T>(dk[rr][t] * scale);
      if (d < Ev) grad_v[(n * a.len_k + j) * Ev + d] = dev::cast<T>(dv[rr][t]);
    }
  }
}

// ---------------------------------------------------------------- host side

AttentionArgs make_args(const shapes::AttentionShape& sh, const View* mask, const AttentionParams& p) {
  ANVIL_CHECK(sh.dim_qk <= kMaxHeadDim && sh.dim_v <= kMaxHeadDim, "attention: head dims up to ", kMaxHeadDim,
              " on CUDA, got E = ", sh.dim_qk, ", Ev = ", sh.dim_v);
  AttentionArgs a;
  a.heads = sh.heads;
  a.len_q = sh.len_q;
  a.len_k = sh.len_k;
  a.dim_qk = static_cast<int>(sh.dim_qk);
  a.dim_v = static_cast<int>(sh.dim_v);
  a.scale = p.scale;
  a.is_causal = p.is_causal;
  a.dropout_p = p.dropout_p;
  a.seed = p.seed;
  a.offset = p.offset;
  if (mask) {
    a.mask.data = mask->data;
    for (int d = 0; d < 4; ++d) a.mask.stride[d] = mask->strides[d];
    a.mask.kind = mask->dtype == kBool ? dev::kAttnMaskBool : dev::kAttnMaskAdditive;
  }
  return a;
}

// The call as attention_choice.h sees it (the cuDNN problem matters for bf16/f16 only).
SdpaRequest sdpa_request(bool backward, const shapes::AttentionShape& sh, const View& q, const View* mask,
                         const AttentionParams& p) {
  SdpaRequest r;
  r.backward = backward;
  r.device = q.device_index;
  r.dtype = q.dtype;
  r.has_mask = mask != nullptr;
  r.dropout = p.dropout_p > 0;
  r.problem = {.dtype = q.dtype,
               .batch = sh.batch,
               .heads = sh.heads,
               .len_q = sh.len_q,
               .len_k = sh.len_k,
               .dim_qk = sh.dim_qk,
               .dim_v = sh.dim_v,
               .causal = p.is_causal,
               .scale = static_cast<float>(p.scale)};
  return r;
}

// Lets `kernel` take `bytes` of dynamic shared memory (over the 48 KiB default).
template <typename Kernel> void allow_shared(Kernel kernel, size_t bytes) {
  if (bytes > 48 * 1024)
    ANVIL_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

unsigned grid_of(int64_t problems, int64_t tiles) {
  const int64_t blocks = problems * tiles;
  ANVIL_CHECK(blocks < (int64_t(1) << 31), "attention: too many (batch * head, tile) blocks for one launch: ", blocks);
  return static_cast<unsigned>(blocks);
}

template <typename T, typename L>
void launch_forward(T* out, L* lse, const T* q, const T* k, const T* v, const AttentionArgs& a, int64_t problems,
                    cudaStream_t s) {
  using C = acc_t<T>;
  const int64_t q_tiles = ceil_div(a.len_q, kRows);
  const size_t bytes = sizeof(C) * (kRows * a.dim_qk + kKeys * (a.dim_qk + 1) + kKeys * a.dim_v + kRows * kKeys);
  allow_shared(attention_forward_kernel<T, L>, bytes);
  launch_kernel(attention_forward_kernel<T, L>, grid_of(problems, q_tiles), kThreads, bytes, s)(out, lse, q, k, v, a,
                                                                                                q_tiles);
  ANVIL_CUDA_CHECK_LAUNCH("attention_forward_kernel");
}

}  // namespace

void attention_forward(const View& out, const View& lse, const View& q, const View& k, const View& v, const View* mask,
                       const AttentionParams& p) {
  ANVIL_NVTX_RANGE("attention.forward");
  const shapes::AttentionShape sh = shapes::check_attention(out, lse, q, k, v, mask);
  const AttentionArgs args = make_args(sh, mask, p);
  if (sh.rows() * sh.len_q == 0) return;
  DeviceGuard guard(q.device_index);
  const cudaStream_t s = stream(q.device_index);
  visit_floating_device_dtype("attention", q.dtype, [&](auto tag) {
    using T = decltype(tag);
    DenseArg qd(cuda_runtime(), q, q.dtype, DenseArg::In), kd(cuda_runtime(), k, q.dtype, DenseArg::In),
        vd(cuda_runtime(), v, q.dtype, DenseArg::In), od(cuda_runtime(), out, q.dtype, DenseArg::Out),
        ld(cuda_runtime(), lse, kFloat32, DenseArg::Out);
    // 16-bit operands go to the tensor cores when that kernel takes the shapes.
    auto flash = [&] {
      if (!attention_forward_tensor_core(q.dtype, od.ptr<T>(), ld.ptr<float>(), qd.ptr<T>(), kd.ptr<T>(), vd.ptr<T>(),
                                         args, sh.rows(), s))
        launch_forward(od.ptr<T>(), ld.ptr<float>(), qd.ptr<T>(), kd.ptr<T>(), vd.ptr<T>(), args, sh.rows(), s);
    };
    // Or cuDNN's fused attention, when attention_choice.h's setting and timing pick it.
    SdpaRequest req = sdpa_request(false, sh, q, mask, p);
    const CudnnSdpaForwardArgs cudnn_args{od.data(), ld.ptr<float>(), qd.data(), kd.data(), vd.data()};
    req.aligned = cudnn_sdpa_aligned(cudnn_args);
    run_sdpa(req, s,
             {[&] { return cudnn_sdpa_forward(cuda_runtime(), q.device_index, s, req.problem, cudnn_args); }, flash});
    od.commit();
    ld.commit();
  });
}

void attention_backward(const View& grad_q, const View& grad_k, const View& grad_v, const View& grad_out, const View& q,
                        const View& k, const View& v, const View& out, const View& lse, const View* mask,
                        const AttentionParams& p) {
  ANVIL_NVTX_RANGE("attention.backward");
  const shapes::AttentionShape sh =
      shapes::check_attention_backward(grad_q, grad_k, grad_v, grad_out, q, k, v, out, lse, mask);
  const AttentionArgs args = make_args(sh, mask, p);
  if (sh.rows() == 0) return;
  DeviceGuard guard(q.device_index);
  const cudaStream_t s = stream(q.device_index);
  visit_floating_device_dtype("attention_backward", q.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = acc_t<T>;
    const DType acc_dtype = sizeof(C) == 8 ? kFloat64 : kFloat32;
    DenseArg qd(cuda_runtime(), q, q.dtype, DenseArg::In), kd(cuda_runtime(), k, q.dtype, DenseArg::In),
        vd(cuda_runtime(), v, q.dtype, DenseArg::In), od(cuda_runtime(), out, q.dtype, DenseArg::In),
        god(cuda_runtime(), grad_out, q.dtype, DenseArg::In), gqd(cuda_runtime(), grad_q, q.dtype, DenseArg::Out),
        gkd(cuda_runtime(), grad_k, q.dtype, DenseArg::Out), gvd(cuda_runtime(), grad_v, q.dtype, DenseArg::Out);
    // The flash kernels; or cuDNN's fused attention when attention_choice.h picks it.
    // The log-sum-exp in C: float's is the saved one; double's is recomputed exactly.
    DenseArg lsed(cuda_runtime(), lse, acc_dtype, DenseArg::In);
    auto flash = [&] {
      const int64_t rows = sh.rows() * sh.len_q;
      Scratch exact_lse(cuda_runtime(), q.device_index, sizeof(C) * static_cast<size_t>(rows));
      const C* lse_c = lsed.ptr<C>();
      if (sizeof(C) == 8 && rows > 0) {
        launch_forward<T, C>(nullptr, exact_lse.as<C>(), qd.ptr<T>(), kd.ptr<T>(), vd.ptr<T>(), args, sh.rows(), s);
        lse_c = exact_lse.as<C>();
      }
      Scratch row_d(cuda_runtime(), q.device_index, sizeof(C) * static_cast<size_t>(rows));
      if (rows > 0) {
        launch_kernel(attention_row_dot_kernel<T>, grid_of(ceil_div(rows, kWarps), 1), kThreads, 0, s)(
            row_d.as<C>(), god.ptr<T>(), od.ptr<T>(), rows, args.dim_v);
        ANVIL_CUDA_CHECK_LAUNCH("attention_row_dot_kernel");
      }
      if constexpr (std::is_same_v<C, float>) {  // 16-bit operands: tensor cores when that kernel takes the shapes
        if (attention_backward_tensor_core(q.dtype, gqd.ptr<T>(), gkd.ptr<T>(), gvd.ptr<T>(), qd.ptr<T>(), kd.ptr<T>(),
                                           vd.ptr<T>(), god.ptr<T>(), lse_c, row_d.as<C>(), args, sh.rows(), s))
          return;
      }
      if (rows > 0) {
        const int64_t q_tiles = ceil_div(sh.len_q, kRows);
        const size_t dq_bytes = sizeof(C) * (kRows * (sh.dim_qk + sh.dim_v) + kKeys * (sh.dim_qk + 1) +
                                             kKeys * (sh.dim_v + 1) + kRows * kKeys);
        allow_shared(attention_dq_kernel<T>, dq_bytes);
        launch_kernel(attention_dq_kernel<T>, grid_of(sh.rows(), q_tiles), kThreads, dq_bytes, s)(
            gqd.ptr<T>(), qd.ptr<T>(), kd.ptr<T>(), vd.ptr<T>(), god.ptr<T>(), lse_c, row_d.as<C>(), args, q_tiles);
        ANVIL_CUDA_CHECK_LAUNCH("attention_dq_kernel");
      }
      if (sh.len_k > 0) {
        const int64_t k_tiles = ceil_div(sh.len_k, kRows);
        const size_t dkdv_bytes = sizeof(C) * (kRows * (sh.dim_qk + sh.dim_v) + kKeys * (sh.dim_qk + 1) +
                                               kKeys * (sh.dim_v + 1) + 2 * kKeys + 2 * kRows * kKeys);
        allow_shared(attention_dkdv_kernel<T>, dkdv_bytes);
        launch_kernel(attention_dkdv_kernel<T>, grid_of(sh.rows(), k_tiles), kThreads, dkdv_bytes, s)(
            gkd.ptr<T>(), gvd.ptr<T>(), qd.ptr<T>(), kd.ptr<T>(), vd.ptr<T>(), god.ptr<T>(), lse_c, row_d.as<C>(), args,
            k_tiles);
        ANVIL_CUDA_CHECK_LAUNCH("attention_dkdv_kernel");
      }
    };
    SdpaRequest req = sdpa_request(true, sh, q, mask, p);
    const CudnnSdpaBackwardArgs cudnn_args{gqd.data(), gkd.data(), gvd.data(), qd.data(),        kd.data(),
                                           vd.data(),  od.data(),  god.data(), lsed.ptr<float>()};
    req.aligned = cudnn_sdpa_aligned(cudnn_args);
    run_sdpa(req, s,
             {[&] { return cudnn_sdpa_backward(cuda_runtime(), q.device_index, s, req.problem, cudnn_args); }, flash});
    gqd.commit();
    gkd.commit();
    gvd.commit();
  });
}

ANVIL_REGISTER_KERNEL(kernel::AttentionForward, CUDA, attention_forward);
ANVIL_REGISTER_KERNEL(kernel::AttentionBackward, CUDA, attention_backward);

}  // namespace anvil::cuda
