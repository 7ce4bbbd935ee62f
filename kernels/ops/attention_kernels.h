#pragma once
// Fused attention, never materialising the [L, S] scores (kernels/*/attention*).
#include <cstdint>

#include "kernels/view.h"

namespace anvil {

// The scores' scale, and whether key j > query i is masked (PyTorch's
// top-left causal alignment). dropout_p > 0: the probabilities are dropped
// as dropout(softmax(scores)) would drop them with the generator at (seed,
// offset): element (n, i, j) of the [B * H, L, S] weights is Philox draw
// (n * L + i) * S + j (philox::keep_at), kept ones scaled by 1 / (1 - p). The
// backward passes the same three values, so the mask is recomputed, never
// stored.
struct AttentionParams {
  double scale = 1.0;
  bool is_causal = false;
  double dropout_p = 0.0;
  uint64_t seed = 0, offset = 0;
};

namespace kernel {

// out = softmax(q @ k^T * scale + mask) @ v for q [B, H, L, E], k [B, H, S, E],
// v [B, H, S, Ev] (one dtype, any strides), out [B, H, L, Ev]. lse [B, H, L]
// float32 gets each row's log-sum-exp of its scaled, masked scores, +inf for
// a row with no allowed key (whose output is 0). mask: null or [B, H, L, S]
// with any strides (0 where broadcast), bool (true = may attend) or q's
// dtype (added to the scores).
struct AttentionForward {
  static constexpr const char* name = "attention_forward";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& lse, const View& q, const View& k, const View& v,
                         const View* mask, const AttentionParams& p);
};

// grad_q, grad_k, grad_v (shapes of q, k, v, dense or not) from grad_out and
// the forward's out and lse, recomputing the probabilities blockwise. A row
// with no allowed key contributes no gradient.
struct AttentionBackward {
  static constexpr const char* name = "attention_backward";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& grad_q, const View& grad_k, const View& grad_v, const View& grad_out,
                         const View& q, const View& k, const View& v, const View& out, const View& lse,
                         const View* mask, const AttentionParams& p);
};

}  // namespace kernel
}  // namespace anvil
