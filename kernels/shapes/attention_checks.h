#pragma once
// The operands of fused attention (kernel::AttentionForward/backward): the
// checks both backends run first, so a bad call fails with the same message
// on CPU and CUDA. Plain C++, no CUDA headers.
#include <cstdint>

#include "kernels/ops/attention_kernels.h"

namespace anvil::shapes {

// q [batch, heads, len_q, dim_qk], k [batch, heads, len_k, dim_qk],
// v [batch, heads, len_k, dim_v].
struct AttentionShape {
  int64_t batch = 0, heads = 0, len_q = 0, len_k = 0, dim_qk = 0, dim_v = 0;
  int64_t rows() const { return batch * heads; }  // independent (batch, head) problems
};

// The mask's kind as the kernels read it.
enum class AttentionMask : uint8_t { None, Bool, Additive };

AttentionShape check_attention(const View& out, const View& lse, const View& q, const View& k, const View& v,
                               const View* mask);
AttentionShape check_attention_backward(const View& grad_q, const View& grad_k, const View& grad_v,
                                        const View& grad_out, const View& q, const View& k, const View& v,
                                        const View& out, const View& lse, const View* mask);
AttentionMask attention_mask_kind(const View* mask);

}  // namespace anvil::shapes
