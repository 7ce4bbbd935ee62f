// Fused attention backward on the CPU (FlashAttention-2's recurrences):
//   P = exp(S - lse), dV += P^T dO, dP = dO V^T, dS = P * (dP - D),
//   dQ += scale * dS K, dK += scale * dS^T Q,  with D = rowsum(dO * O),
// and with dropout's factors M (0 or 1/(1-p), recomputed from Philox):
//   dV += (P*M)^T dO, dS = P * (dP*M - D)  (D = rowsum(dO * O) still holds),
// over kBlockQ x kBlockK tiles of S recomputed from q and k, so no [L, S]
// matrix is held. One OpenMP task per (batch, head) problem, which owns its
// dQ, dK and dV outright: no atomics, no reduction, deterministic. (A single
// problem thus runs on one thread; attention has B * H problems, which is
// enough for a CPU's cores in practice.)
//
// float64 recomputes each row's log-sum-exp in double first (one more pass
// over the score tiles) rather than use the forward's float32 one, so its
// gradients are exact for finite-difference checks.
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/attention_tiles.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/attention_kernels.h"
#include "kernels/cpu/parallel_if.h"

namespace anvil::cpu {
namespace {

using attention::kBlockK;
using attention::kBlockQ;
using attention::Problem;

// One problem's dense operands (rows of this (batch, head)).
template <typename C> struct ProblemData {
  const C *q, *k, *v, *out, *grad_out;
  C *grad_q, *grad_k, *grad_v;
};

template <typename C> struct BackwardScratch {
  std::vector<C> probs, dprobs, dropped, row_d, row_lse;
  explicit BackwardScratch(int64_t len_q)
      : probs(kBlockQ * kBlockK), dprobs(kBlockQ * kBlockK), dropped(kBlockQ * kBlockK), row_d(len_q), row_lse(len_q) {}
};

// The log-sum-exp of every row in C, recomputed from the scores (float64's exact path).
template <typename C> void recompute_lse(C* lse, const ProblemData<C>& d, const Problem& p, C* s) {
  constexpr C kInf = std::numeric_limits<C>::infinity();
  const int64_t len_q = p.shape->len_q;
  for (int64_t i0 = 0; i0 < len_q; i0 += kBlockQ) {
    const int64_t rows = std::min(kBlockQ, len_q - i0), key_end = p.key_end(i0, rows);
    std::vector<C> mx(rows, -kInf), sum(rows, C(0));
    for (int64_t j0 = 0; j0 < key_end; j0 += kBlockK) {
      const int64_t cols = std::min(kBlockK, key_end - j0);
      attention::score_tile(s, kBlockK, d.q, d.k, i0, rows, j0, cols, p);
      for (int64_t r = 0; r < rows; ++r) {
        const C* row = s + r * kBlockK;
        C m = mx[r];
        for (int64_t c = 0; c < cols; ++c) m = std::max(m, row[c]);
        if (m == -kInf) continue;
        C add = 0;
        for (int64_t c = 0; c < cols; ++c) add += std::exp(row[c] - m);
        sum[r] = sum[r] * std::exp(mx[r] - m) + add;
        mx[r] = m;
      }
    }
    for (int64_t r = 0; r < rows; ++r) lse[i0 + r] = sum[r] > 0 ? mx[r] + std::log(sum[r]) : kInf;
  }
}

template <typename C>
void backward_problem(const ProblemData<C>& d, const float* saved_lse, const Problem& p, BackwardScratch<C>& w) {
  const auto& sh = *p.shape;
  const int64_t e = sh.dim_qk, ev = sh.dim_v;
  const C scale = static_cast<C>(p.scale());
  std::fill(d.grad_q, d.grad_q + sh.len_q * e, C(0));
  std::fill(d.grad_k, d.grad_k + sh.len_k * e, C(0));
  std::fill(d.grad_v, d.grad_v + sh.len_k * ev, C(0));
  for (int64_t i = 0; i < sh.len_q; ++i) {
    C acc = 0;
    for (int64_t c = 0; c < ev; ++c) acc += d.grad_out[i * ev + c] * d.out[i * ev + c];
    w.row_d[i] = acc;
  }
  if constexpr (std::is_same_v<C, double>) {
    recompute_lse(w.row_lse.data(), d, p, w.probs.data());
  } else {
    for (int64_t i = 0; i < sh.len_q; ++i) w.row_lse[i] = saved_lse[i];
  }
  C* s = w.probs.data();
  C* ds = w.dprobs.data();
  for (int64_t j0 = 0; j0 < sh.len_k; j0 += kBlockK) {
    const int64_t cols = std::min(kBlockK, sh.len_k - j0);
    // Causal: query blocks that end before j0 see none of these keys.
    const int64_t first_block = p.is_causal() ? j0 / kBlockQ * kBlockQ : 0;
    for (int64_t i0 = first_block; i0 < sh.len_q; i0 += kBlockQ) {
      const int64_t rows = std::min(kBlockQ, sh.len_q - i0);
      attention::score_tile(s, kBlockK, d.q, d.k, i0, rows, j0, cols, p);
      for (int64_t r = 0; r < rows; ++r)  // exp(-inf) = 0 for masked keys and for rows whose lse is +inf
        attention::exp_shifted(s + r * kBlockK, cols, w.row_lse[i0 + r]);
      // dP = dO V^T is the gradient of the dropped weights; with dropout it
      // passes through the same mask (dropped tile: s as the forward used it).
      if (ev > 0) {
        gemm(false, true, rows, cols, ev, C(1), d.grad_out + i0 * ev, ev, d.v + j0 * ev, ev, C(0), ds, kBlockK);
      } else {
        for (int64_t r = 0; r < rows; ++r) std::fill(ds + r * kBlockK, ds + r * kBlockK + cols, C(0));
      }
      if (p.params->dropout_p > 0) {
        std::copy(s, s + rows * kBlockK, w.dropped.begin());
        attention::drop_tile(w.dropped.data(), kBlockK, rows, cols, i0, j0, p, ds);
      }
      const C* weights = p.params->dropout_p > 0 ? w.dropped.data() : s;  // what the forward multiplied V by
      if (ev > 0)
        gemm(true, false, cols, ev, rows, C(1), weights, kBlockK, d.grad_out + i0 * ev, ev, C(1), d.grad_v + j0 * ev,
             ev);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          ds[r * kBlockK + c] = s[r * kBlockK + c] * (ds[r * kBlockK + c] - w.row_d[i0 + r]);
      if (e > 0) {
        gemm(false, false, rows, e, cols, scale, ds, kBlockK, d.k + j0 * e, e, C(1), d.grad_q + i0 * e, e);
        gemm(true, false, cols, e, rows, scale, ds, kBlockK, d.q + i0 * e, e, C(1), d.grad_k + j0 * e, e);
      }
    }
  }
}

template <typename C>
void attention_backward_typed(const View& gq_view, const View& gk_view, const View& gv_view, const View& go_view,
                              const View& q_view, const View& k_view, const View& v_view, const View& out_view,
                              const View& lse_view, const View* mask, const AttentionParams& params,
                              const shapes::AttentionShape& sh) {
  const DenseIn<C> q(q_view), k(k_view), v(v_view), out(out_view), grad_out(go_view);
  const DenseIn<float> lse(lse_view);
  DenseOut<C> grad_q(gq_view), grad_k(gk_view), grad_v(gv_view);
  const int64_t problems = sh.rows();
  const int64_t qs = sh.len_q * sh.dim_qk, ks = sh.len_k * sh.dim_qk, vs = sh.len_k * sh.dim_v,
                os = sh.len_q * sh.dim_v;
  parallel_if(problems > 1, [&] {
    BackwardScratch<C> scratch(sh.len_q);
#pragma omp for schedule(dynamic)
    for (int64_t n = 0; n < problems; ++n) {
      const Problem p{&sh, mask, &params, n};
      const ProblemData<C> d{q.get() + n * qs,      k.get() + n * ks,        v.get() + n * vs,
                             out.get() + n * os,    grad_out.get() + n * os, grad_q.get() + n * qs,
                             grad_k.get() + n * ks, grad_v.get() + n * vs};
      backward_problem(d, lse.get() + n * sh.len_q, p, scratch);
    }
  });
  grad_q.commit();
  grad_k.commit();
  grad_v.commit();
}

}  // namespace

void attention_backward(const View& grad_q, const View& grad_k, const View& grad_v, const View& grad_out, const View& q,
                        const View& k, const View& v, const View& out, const View& lse, const View* mask,
                        const AttentionParams& p) {
  const shapes::AttentionShape sh =
      shapes::check_attention_backward(grad_q, grad_k, grad_v, grad_out, q, k, v, out, lse, mask);
  dispatch_floating("attention_backward", q.dtype, [&](auto tag) {
    attention_backward_typed<decltype(tag)>(grad_q, grad_k, grad_v, grad_out, q, k, v, out, lse, mask, p, sh);
  });
}

ANVIL_REGISTER_KERNEL(kernel::AttentionBackward, CPU, attention_backward);

}  // namespace anvil::cpu
