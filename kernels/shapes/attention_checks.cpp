#include "kernels/shapes/attention_checks.h"

#include "core/base/error.h"

namespace anvil::shapes {
namespace {

bool is_attention_dtype(DType t) { return t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16; }

void check_same(const char* what, const View& got, const Shape& want, DType dtype) {
  ANVIL_CHECK(got.shape == want && got.dtype == dtype, "attention: expected ", what, " ", want, " ", dtype_name(dtype),
              ", got ", got.shape, " ", dtype_name(got.dtype));
}

}  // namespace

AttentionShape check_attention(const View& out, const View& lse, const View& q, const View& k, const View& v,
                               const View* mask) {
  ANVIL_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
              "attention: expected q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev], got q ", q.shape, ", k ", k.shape,
              ", v ", v.shape);
  ANVIL_CHECK(is_attention_dtype(q.dtype) && k.dtype == q.dtype && v.dtype == q.dtype,
              "attention: expected q, k, v of one floating dtype (float32, float64, float16, bfloat16), got ",
              dtype_name(q.dtype), ", ", dtype_name(k.dtype), ", ", dtype_name(v.dtype));
  AttentionShape s{q.shape[0], q.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]};
  ANVIL_CHECK(k.shape == Shape({s.batch, s.heads, s.len_k, s.dim_qk}) && v.shape[0] == s.batch &&
                  v.shape[1] == s.heads && v.shape[2] == s.len_k,
              "attention: expected q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev], got q ", q.shape, ", k ", k.shape,
              ", v ", v.shape);
  check_same("out", out, {s.batch, s.heads, s.len_q, s.dim_v}, q.dtype);
  check_same("lse", lse, {s.batch, s.heads, s.len_q}, kFloat32);
  if (mask) {
    ANVIL_CHECK(
        mask->shape == Shape({s.batch, s.heads, s.len_q, s.len_k}) && (mask->dtype == kBool || mask->dtype == q.dtype),
        "attention: expected a mask [", s.batch, ", ", s.heads, ", ", s.len_q, ", ", s.len_k, "] of bool or ",
        dtype_name(q.dtype), ", got ", mask->shape, " ", dtype_name(mask->dtype));
  }
  return s;
}

AttentionShape check_attention_backward(const View& grad_q, const View& grad_k, const View& grad_v,
                                        const View& grad_out, const View& q, const View& k, const View& v,
                                        const View& out, const View& lse, const View* mask) {
  const AttentionShape s = check_attention(out, lse, q, k, v, mask);
  check_same("grad_out", grad_out, out.shape, q.dtype);
  check_same("grad_q", grad_q, q.shape, q.dtype);
  check_same("grad_k", grad_k, k.shape, q.dtype);
  check_same("grad_v", grad_v, v.shape, q.dtype);
  return s;
}

AttentionMask attention_mask_kind(const View* mask) {
  if (!mask) return AttentionMask::None;
  return mask->dtype == kBool ? AttentionMask::Bool : AttentionMask::Additive;
}

}  // namespace anvil::shapes
