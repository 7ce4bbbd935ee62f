#include "nn/layers/multihead_attention.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops.h"
#include "nn/init.h"

namespace anvil::nn {

namespace {

constexpr const char* kName = "MultiheadAttention";

std::string describe(const Tensor& t) { return t.defined() ? t.shape_str() : std::string("undefined"); }

// A mask in scaled_dot_product_attention's convention: bool true = may
// attend, or floating values added to the scores. PyTorch's MHA masks use
// bool true = may NOT attend.
Tensor as_sdpa_mask(const Tensor& m, DType dtype) {
  if (!m.defined()) return m;
  return m.dtype() == kBool ? logical_not(m) : m.to(dtype);
}

// Two masks in SDPA's convention combined into one that broadcasts to both.
Tensor combine(const Tensor& a, const Tensor& b, DType dtype) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  if (a.dtype() == kBool && b.dtype() == kBool) return logical_and(a, b);
  auto additive = [&](const Tensor& m) {
    return m.dtype() != kBool ? m
                              : masked_fill(zeros(m.shape(), m.options().dtype(dtype)), logical_not(m),
                                            Scalar(-std::numeric_limits<double>::infinity()));
  };
  return add(additive(a), additive(b));
}

// `m` (SDPA's convention) with `extra` more key columns that every query may
// attend: the keys add_bias_kv and add_zero_attn append (PyTorch pads its
// masks with zeros, "may attend" in its convention too).
Tensor pad_keys(const Tensor& m, int64_t extra) {
  if (!m.defined() || extra == 0) return m;
  Shape shape = m.shape();
  shape.back() = extra;
  Tensor open = m.dtype() == kBool ? ones(shape, m.options()) : zeros(shape, m.options());
  return cat({m, open}, -1);
}

}  // namespace

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& o) : Module(kName), options(o) {
  ANVIL_CHECK(o.embed_dim > 0 && o.num_heads > 0, kName, ": expected embed_dim > 0 and num_heads > 0, got embed_dim ",
              o.embed_dim, ", num_heads ", o.num_heads);
  ANVIL_CHECK(o.embed_dim % o.num_heads == 0, kName, ": embed_dim (", o.embed_dim, ") must be divisible by num_heads (",
              o.num_heads, ")");
  ANVIL_CHECK(o.dropout >= 0 && o.dropout < 1, kName, ": expected dropout in [0, 1), got ", o.dropout);
  ANVIL_CHECK(o.kdim >= 0 && o.vdim >= 0, kName, ": expected kdim, vdim >= 0 (0 = embed_dim), got ", o.kdim, ", ",
              o.vdim);
  if (options.kdim == 0) options.kdim = o.embed_dim();
  if (options.vdim == 0) options.vdim = o.embed_dim();
  head_dim = o.embed_dim / o.num_heads;
  const int64_t e = o.embed_dim;
  if (same_embed_dim()) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({e, e}));
    k_proj_weight = register_parameter("k_proj_weight", empty({e, options.kdim}));
    v_proj_weight = register_parameter("v_proj_weight", empty({e, options.vdim}));
  }
  if (o.bias) in_proj_bias = register_parameter("in_proj_bias", empty({3 * e}));
  if (o.add_bias_kv) {
    bias_k = register_parameter("bias_k", empty({1, 1, e}));
    bias_v = register_parameter("bias_v", empty({1, 1, e}));
  }
  out_proj = register_module("out_proj", std::make_shared<Linear>(e, e, o.bias));
  reset_parameters();
}

void MultiheadAttention::reset_parameters() {
  if (same_embed_dim()) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) init::zeros_(in_proj_bias);
  if (out_proj->bias.defined()) init::zeros_(out_proj->bias);
  if (bias_k.defined()) {
    init::xavier_normal_(bias_k);
    init::xavier_normal_(bias_v);
  }
}

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                      const MHAForwardOptions& fo) {
  const int64_t e = options.embed_dim, heads = options.num_heads;
  ANVIL_CHECK(query.defined() && key.defined() && value.defined(), kName,
              ": query, key and value must be defined, got ", describe(query), ", ", describe(key), ", ",
              describe(value));
  const bool batched = query.dim() == 3;
  const std::string layout = options.batch_first ? "[N, L, E]" : "[L, N, E]";
  ANVIL_CHECK((query.dim() == 3 || query.dim() == 2) && key.dim() == query.dim() && value.dim() == query.dim(), kName,
              ": expected query, key, value of 3 dims (", layout, ") or 2 (unbatched [L, E]), got query ",
              query.shape_str(), ", key ", key.shape_str(), ", value ", value.shape_str());
  ANVIL_CHECK(query.size(-1) == e && key.size(-1) == options.kdim && value.size(-1) == options.vdim, kName,
              ": expected the last dims of query, key, value to be embed_dim ", e, ", kdim ", options.kdim, ", vdim ",
              options.vdim, ", got query ", query.shape_str(), ", key ", key.shape_str(), ", value ",
              value.shape_str());
  // Everything below works on [N, L, E].
  auto to_nle = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(0);
    return options.batch_first ? t : t.transpose(0, 1);
  };
  Tensor q = to_nle(query), k = to_nle(key), v = to_nle(value);
  const int64_t n = q.size(0), len_q = q.size(1), len_k = k.size(1);
  ANVIL_CHECK(k.size(0) == n && v.size(0) == n && v.size(1) == len_k, kName,
              ": key and value must have query's batch size and one length, got query ", query.shape_str(), ", key ",
              key.shape_str(), ", value ", value.shape_str(), " (layout ", layout, ")");

  Tensor bq, bk, bv;
  if (in_proj_bias.defined()) {
    bq = in_proj_bias.narrow(0, 0, e);
    bk = in_proj_bias.narrow(0, e, e);
    bv = in_proj_bias.narrow(0, 2 * e, e);
  }
  Tensor wq = same_embed_dim() ? in_proj_weight.narrow(0, 0, e) : q_proj_weight;
  Tensor wk = same_embed_dim() ? in_proj_weight.narrow(0, e, e) : k_proj_weight;
  Tensor wv = same_embed_dim() ? in_proj_weight.narrow(0, 2 * e, e) : v_proj_weight;
  auto split_heads = [&](const Tensor& t, int64_t len) {  // [N, len, E] -> [N, H, len, D]
    return t.reshape({n, len, heads, head_dim}).transpose(1, 2);
  };
  q = split_heads(linear(q, wq, bq), len_q);
  k = linear(k, wk, bk);
  v = linear(v, wv, bv);
  // As PyTorch: bias_k/bias_v after the projected keys, then a zero key per head.
  int64_t extra = 0;
  if (bias_k.defined()) {
    detail::check_same_device(kName, {k, bias_k});
    k = cat({k, bias_k.expand({n, 1, e})}, 1);
    v = cat({v, bias_v.expand({n, 1, e})}, 1);
    ++extra;
  }
  k = split_heads(k, len_k + extra);
  v = split_heads(v, len_k + extra);
  if (options.add_zero_attn) {
    k = cat({k, zeros({n, heads, 1, head_dim}, k.options())}, 2);
    v = cat({v, zeros({n, heads, 1, head_dim}, v.options())}, 2);
    ++extra;
  }
  const DType dtype = q.dtype();

  // Masks, in SDPA's convention, broadcasting to [N, H, L, S].
  Tensor mask;
  if (fo.key_padding_mask.defined()) {
    const Tensor& kpm = fo.key_padding_mask;
    const bool ok =
        batched ? kpm.dim() == 2 && kpm.size(0) == n && kpm.size(1) == len_k : kpm.dim() == 1 && kpm.size(0) == len_k;
    ANVIL_CHECK(ok, kName, ": expected key_padding_mask ",
                batched ? "[N, S] = [" + std::to_string(n) + ", " : "[S] = [", len_k, "], got ", kpm.shape_str());
    ANVIL_CHECK(kpm.dtype() == kBool || kpm.is_floating_point(), kName,
                ": key_padding_mask must be bool (true = ignore this key) or floating (added), got ", kpm.dtype());
    mask = as_sdpa_mask(kpm.reshape({n, 1, 1, len_k}), dtype);
  }
  if (fo.attn_mask.defined()) {
    const Tensor& am = fo.attn_mask;
    ANVIL_CHECK(am.dtype() == kBool || am.is_floating_point(), kName,
                ": attn_mask must be bool (true = may not attend) or floating (added), got ", am.dtype());
    Tensor m;
    if (am.dim() == 2 && am.size(0) == len_q && am.size(1) == len_k)
      m = am;
    else if (am.dim() == 3 && am.size(0) == n * heads && am.size(1) == len_q && am.size(2) == len_k)
      m = am.reshape({n, heads, len_q, len_k});
    ANVIL_CHECK(m.defined(), kName, ": expected attn_mask [L, S] = [", len_q, ", ", len_k,
                "] or [N * num_heads, L, S] = [", n * heads, ", ", len_q, ", ", len_k, "], got ", am.shape_str());
    mask = combine(mask, as_sdpa_mask(m, dtype), dtype);
  }
  // The causal mask covers the given keys; the appended ones stay open to all.
  bool is_causal = fo.is_causal;
  if (extra > 0 && is_causal) {
    mask = combine(mask, logical_not(triu(ones({len_q, len_k}, q.options().dtype(kBool)), 1)), dtype);
    is_causal = false;
  }
  mask = pad_keys(mask, extra);
  const int64_t len_kv = len_k + extra;
  if (mask.defined()) detail::check_same_device(kName, {q, mask});
  const double p = is_training() ? options.dropout() : 0.0;

  Tensor out, weights;
  if (!fo.need_weights) {
    AttentionOptions ao;
    ao.attn_mask = mask;
    ao.dropout_p = p;
    ao.is_causal = is_causal;
    out = scaled_dot_product_attention(q, k, v, ao);
  } else {
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));
    Tensor scores = mul(matmul(q, k.transpose(-1, -2)), Scalar(scale));
    if (is_causal) {
      Tensor causal = logical_not(triu(ones({len_q, len_kv}, q.options().dtype(kBool)), 1));
      mask = combine(mask, causal, dtype);
    }
    if (mask.defined()) {
      scores = mask.dtype() == kBool
                   ? masked_fill(scores, logical_not(mask), Scalar(-std::numeric_limits<double>::infinity()))
                   : add(scores, mask);
    }
    Tensor w = dropout(softmax(scores, -1), p, is_training());
    out = matmul(w, v);
    weights = fo.average_attn_weights ? mean(w, {1}) : w;
    if (!batched) weights = weights.squeeze(0);
  }
  out = out_proj->forward(out.transpose(1, 2).reshape({n, len_q, e}));
  if (!batched)
    out = out.squeeze(0);
  else if (!options.batch_first)
    out = out.transpose(0, 1);
  return {out, weights};
}

Tensor MultiheadAttention::forward(const Tensor& x) {
  return forward(x, x, x, MHAForwardOptions().need_weights(false)).first;
}

Tensor MultiheadAttention::forward_inputs(const std::vector<Tensor>& in) {
  ANVIL_CHECK(in.size() == 1 || (in.size() >= 3 && in.size() <= 5), kName,
              ": forward_inputs takes {x} or {query, key, value[, key_padding_mask[, attn_mask]]}, got ", in.size(),
              " inputs");
  if (in.size() == 1) return forward(in[0]);
  MHAForwardOptions o;
  o.need_weights = false;
  if (in.size() > 3) o.key_padding_mask = in[3];
  if (in.size() > 4) o.attn_mask = in[4];
  return forward(in[0], in[1], in[2], o).first;
}

std::string MultiheadAttention::extra_repr() const {
  std::ostringstream os;
  os << "embed_dim=" << options.embed_dim << ", num_heads=" << options.num_heads;
  if (options.dropout > 0) os << ", dropout=" << options.dropout;
  if (!same_embed_dim()) os << ", kdim=" << options.kdim << ", vdim=" << options.vdim;
  if (options.batch_first) os << ", batch_first=True";
  if (options.add_bias_kv) os << ", add_bias_kv=True";
  if (options.add_zero_attn) os << ", add_zero_attn=True";
  return os.str();
}

}  // namespace anvil::nn
