// scaled_dot_product_attention as one fused op: the backend's
// attention_forward writes the output and each query row's log-sum-exp
// (float32); the backward (attention_backward) recomputes the probabilities
// blockwise from q, k, v and that log-sum-exp (FlashAttention-2), so neither
// pass holds the [L, S] score matrix. Leading dims are flattened to
// [B, H] with differentiable views around the fused node, so broadcasting
// (and its gradient's reduction) is ordinary autograd.
//
// Dropout stays fused: the op reserves B * H * L * S Philox draws, as
// dropout(weights) would, and the kernels decide each probability's fate
// from its index (forward and backward alike), so no mask is stored and the
// result equals the math path's under the same seed.
//
// A mask that requires grad takes PyTorch's math path (matmul, mask, softmax,
// dropout, matmul) instead: the fused backward gives no gradient for the
// mask. Under create_graph the fused node's backward is composed from ops
// too, so second-order gradients exist.
#include <cmath>
#include <memory>

#include "core/autocast.h"
#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/linalg.h"
#include "core/ops/nn/nn_common.h"
#include "core/ops/nn_ops.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"
#include "core/random.h"

namespace anvil {

using autograd::GradMode;
using autograd::SavedTensor;
using nn_detail::Grads;

namespace {

constexpr const char* kOp = "scaled_dot_product_attention";

// The scores with the causal and user masks applied: [..., L, S].
Tensor masked_scores(const Tensor& q, const Tensor& k, const Tensor& mask, double scale, bool is_causal) {
  Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;
  if (is_causal) {
    const TensorOptions index_options = TensorOptions().dtype(kInt64).device(q.device());
    Tensor future = gt(arange(static_cast<double>(k.size(-2)), index_options).unsqueeze(0),
                       arange(static_cast<double>(q.size(-2)), index_options).unsqueeze(1));
    scores = masked_fill(scores, future, -INFINITY);
  }
  if (mask.defined())
    scores = mask.dtype() == kBool ? masked_fill(scores, logical_not(mask), -INFINITY) : scores + mask;
  return scores;
}

// PyTorch's math path. A fully masked row gives NaN here, as PyTorch's.
Tensor attention_composed(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o, double scale) {
  Tensor weights = softmax(masked_scores(q, k, o.attn_mask, scale, o.is_causal), -1);
  if (o.dropout_p > 0) weights = dropout(weights, o.dropout_p, true);
  return matmul(weights, v);
}

// What the fused node's backward needs. q, k, v, mask are [B, H, ...].
struct AttentionSaved {
  SavedTensor q, k, v, out;
  Tensor lse;  // [B, H, L] float32, internal to the node
  Tensor mask;  // [B, H, L, S] (strides 0 where broadcast) or undefined; never requires grad
  AttentionParams params;
  bool need_q = false, need_k = false, need_v = false;
};

// The backward under create_graph: the same gradients from differentiable
// ops (it materialises the scores, as any second-order pass would).
// Dropout's factors (0 or 1 / (1 - p)) for [B, H, L, S] weights, drawn again
// from the forward's generator state: the mask the fused kernels recompute.
Tensor dropout_factors(const Tensor& like, const AttentionParams& params) {
  Tensor u = empty(like.shape(), like.options().dtype(kFloat32).requires_grad(false));
  RandomParams draw;
  draw.seed = params.seed;
  draw.offset = params.offset;
  if (u.numel() > 0)
    detail::kernel_of<kernel::Random>(u)(u.view_of(), draw);  // uniform [0, 1), element i at offset + i/4
  return ge(u, Scalar(params.dropout_p)).to(like.dtype()) * (1.0 / (1.0 - params.dropout_p));
}

Grads attention_composed_backward(const Tensor& g, const AttentionSaved& s) {
  Tensor q = s.q.get(), k = s.k.get(), v = s.v.get();
  Tensor p = softmax(masked_scores(q, k, s.mask, s.params.scale, s.params.is_causal), -1);
  p = masked_fill(p, p.isnan(), 0.0);  // fully masked rows: no gradient, as the fused kernels
  Tensor dp = matmul(g, v.transpose(-2, -1));
  Tensor weights = p;  // what multiplied v in the forward
  if (s.params.dropout_p > 0) {
    const Tensor factors = dropout_factors(p, s.params);
    dp = dp * factors;
    weights = p * factors;
  }
  Tensor ds = p * (dp - sum(dp * p, {p.dim() - 1}, true));
  Grads r(3);
  if (s.need_q) r[0] = matmul(ds, k) * s.params.scale;
  if (s.need_k) r[1] = matmul(ds.transpose(-2, -1), q) * s.params.scale;
  if (s.need_v) r[2] = matmul(weights.transpose(-2, -1), g);
  return r;
}

Grads attention_fused_backward(const Tensor& g, const AttentionSaved& s) {
  Tensor q = s.q.get(), k = s.k.get(), v = s.v.get(), out = s.out.get();
  Tensor gq = empty(q.shape(), q.options()), gk = empty(k.shape(), k.options()), gv = empty(v.shape(), v.options());
  View mask_slot;
  detail::kernel_of<kernel::AttentionBackward>(q)(gq.view_of(), gk.view_of(), gv.view_of(), g.to(q.dtype()).view_of(),
                                                  q.view_of(), k.view_of(), v.view_of(), out.view_of(), s.lse.view_of(),
                                                  nn_detail::optional_view(s.mask, mask_slot), s.params);
  Grads r(3);
  if (s.need_q) r[0] = gq;
  if (s.need_k) r[1] = gk;
  if (s.need_v) r[2] = gv;
  return r;
}

// The fused op on [B, H, L, E] operands (mask [B, H, L, S] or undefined).
Tensor attention_fused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                       const AttentionParams& params) {
  Tensor out = empty({q.size(0), q.size(1), q.size(2), v.size(3)}, q.options());
  Tensor lse = empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(kFloat32));
  View mask_slot;
  detail::kernel_of<kernel::AttentionForward>(q)(out.view_of(), lse.view_of(), q.detach().view_of(),
                                                 k.detach().view_of(), v.detach().view_of(),
                                                 nn_detail::optional_view(mask, mask_slot), params);
  if (autograd::needs_grad({q, k, v})) {
    auto s = std::make_shared<AttentionSaved>();
    s->q = SavedTensor(q, kOp);
    s->k = SavedTensor(k, kOp);
    s->v = SavedTensor(v, kOp);
    s->lse = lse;
    s->mask = mask;
    s->params = params;
    s->need_q = q.requires_grad();
    s->need_k = k.requires_grad();
    s->need_v = v.requires_grad();
    autograd::record(kOp, {q, k, v}, out, [s](const Tensor& g) {
      return GradMode::is_enabled() ? attention_composed_backward(g, *s) : attention_fused_backward(g, *s);
    });
    s->out = SavedTensor::output(out, kOp);
  }
  return out;
}

// t broadcast to lead + [rows, cols], as [B, H, rows, cols]: a view (strides
// 0 where broadcast) for up to two leading dims, a reshape (copy when the
// broadcast dims do not merge) for more.
Tensor as_batch_heads(const Tensor& t, const Shape& lead, int64_t rows, int64_t cols) {
  Shape full = lead;
  full.push_back(rows);
  full.push_back(cols);
  Tensor e = t.expand(full);
  if (lead.size() > 2) {
    int64_t batch = 1;
    for (size_t i = 0; i + 1 < lead.size(); ++i) batch *= lead[i];
    return e.reshape({batch, lead.back(), rows, cols});
  }
  while (e.dim() < 4) e = e.unsqueeze(0);
  return e;
}

Shape leading(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// Whether `from` broadcasts to `to` (numpy's rules, `to` fixed).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i) {
    const int64_t f = from[from.size() - i], t = to[to.size() - i];
    if (f != 1 && f != t) return false;
  }
  return true;
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o) {
  if (auto cast = autocast::lower_precision_inputs(q, k, v))
    return scaled_dot_product_attention(cast[0], cast[1], cast[2], o);
  ANVIL_CHECK(q.defined() && k.defined() && v.defined() && q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, kOp,
              ": expected q [..., L, E], k [..., S, E], v [..., S, Ev], got q ", detail::describe(q), ", k ",
              detail::describe(k), ", v ", detail::describe(v));
  ANVIL_CHECK(q.size(-1) == k.size(-1) && k.size(-2) == v.size(-2), kOp, ": expected q [..., L, E], k [..., S, E], ",
              "v [..., S, Ev], got q ", q.shape_str(), ", k ", k.shape_str(), ", v ", v.shape_str());
  detail::check_same_device(kOp, {q, k, v, o.attn_mask});
  detail::check_floating(kOp, q, "q");
  ANVIL_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), kOp, ": expected q, k, v of one dtype, got q ",
              detail::describe(q), ", k ", detail::describe(k), ", v ", detail::describe(v));
  ANVIL_CHECK(o.dropout_p >= 0 && o.dropout_p <= 1, kOp, ": expected dropout_p in [0, 1], got ", o.dropout_p);
  const int64_t len_q = q.size(-2), len_k = k.size(-2);
  Shape lead = broadcast_shapes(broadcast_shapes(leading(q), leading(k), kOp), leading(v), kOp);
  Tensor mask = o.attn_mask;
  if (mask.defined()) {
    ANVIL_CHECK(mask.dtype() == kBool || is_floating(mask.dtype()), kOp,
                ": expected attn_mask of bool (true = may attend) or a floating dtype (added), got ",
                detail::describe(mask));
    Shape want = lead;
    want.push_back(len_q);
    want.push_back(len_k);
    ANVIL_CHECK(broadcasts_to(mask.shape(), want), kOp, ": attn_mask ", mask.shape_str(),
                " does not broadcast to the scores ", Shape(want), " (q ", q.shape_str(), ", k ", k.shape_str(), ")");
  }
  const double scale = o.scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  // p == 1 goes to the math path too, whose dropout says why it refuses it.
  if (o.dropout_p >= 1 || (mask.defined() && mask.requires_grad())) return attention_composed(q, k, v, o, scale);

  // Cast an additive mask before broadcasting it, so no [.., L, S] copy is made.
  if (mask.defined() && mask.dtype() != kBool && mask.dtype() != q.dtype()) mask = mask.to(q.dtype());
  if (mask.defined()) mask = as_batch_heads(mask.detach(), lead, len_q, len_k);
  AttentionParams params;
  params.scale = scale;
  params.is_causal = o.is_causal;
  if (o.dropout_p > 0) {
    int64_t weights = len_q * len_k;
    for (int64_t d : lead) weights *= d;
    const GeneratorState state = reserve_random(static_cast<uint64_t>(weights));  // what dropout(weights) reserves
    params.dropout_p = o.dropout_p;
    params.seed = state.seed;
    params.offset = state.offset;
  }
  Tensor out = attention_fused(as_batch_heads(q, lead, len_q, q.size(-1)), as_batch_heads(k, lead, len_k, k.size(-1)),
                               as_batch_heads(v, lead, len_k, v.size(-1)), mask, params);
  Shape out_shape = lead;
  out_shape.push_back(len_q);
  out_shape.push_back(v.size(-1));
  return out.reshape(out_shape);
}

}  // namespace anvil
