// MultiheadAttention against a loop over plain doubles (projections, per-head
// softmax, masks in PyTorch's convention), both paths (fused without weights,
// composed with them), gradients, layouts and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/ops.h"
#include "nn/layers/checkpointed.h"
#include "nn/layers/container.h"
#include "nn/layers/multihead_attention.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using Vec = std::vector<double>;

struct RefOut {
  Vec out;  // [N, L, E]
  Vec weights;  // [N, L, S], averaged over heads
};

// q [N, L, E], k [N, S, kdim], v [N, S, vdim] (batch first); banned(b, i, j)
// says whether query i of batch b may not see key j; additive(b, h, i, j) adds.
template <class Banned, class Additive>
RefOut reference(nn::MultiheadAttention& m, const Tensor& q, const Tensor& k, const Tensor& v, Banned banned,
                 Additive additive) {
  const int64_t n = q.size(0), l = q.size(1), s = k.size(1), e = m.options.embed_dim, heads = m.options.num_heads;
  const int64_t d = e / heads;
  Vec wq, wk, wv;
  if (m.in_proj_weight.defined()) {
    Vec w = m.in_proj_weight.to_vector<double>();
    wq.assign(w.begin(), w.begin() + e * e);
    wk.assign(w.begin() + e * e, w.begin() + 2 * e * e);
    wv.assign(w.begin() + 2 * e * e, w.end());
  } else {
    wq = m.q_proj_weight.to_vector<double>(), wk = m.k_proj_weight.to_vector<double>();
    wv = m.v_proj_weight.to_vector<double>();
  }
  Vec b = m.in_proj_bias.defined() ? m.in_proj_bias.to_vector<double>() : Vec(3 * e, 0.0);
  Vec wo = m.out_proj->weight.to_vector<double>();
  Vec bo = m.out_proj->bias.defined() ? m.out_proj->bias.to_vector<double>() : Vec(e, 0.0);
  auto project = [&](const Tensor& x, const Vec& w, int64_t boff) {  // [N, T, in] -> [N, T, E]
    const int64_t t = x.size(1), in = x.size(2);
    Vec xv = x.to_vector<double>(), y(n * t * e);
    for (int64_t i = 0; i < n * t; ++i)
      for (int64_t o = 0; o < e; ++o) {
        double acc = b[boff + o];
        for (int64_t c = 0; c < in; ++c) acc += w[o * in + c] * xv[i * in + c];
        y[i * e + o] = acc;
      }
    return y;
  };
  Vec pq = project(q, wq, 0), pk = project(k, wk, e), pv = project(v, wv, 2 * e);
  RefOut r{Vec(n * l * e, 0.0), Vec(n * l * s, 0.0)};
  Vec concat(n * l * e, 0.0);
  for (int64_t bi = 0; bi < n; ++bi)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < l; ++i) {
        Vec sc(s);
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < s; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += pq[(bi * l + i) * e + h * d + c] * pk[(bi * s + j) * e + h * d + c];
          sc[j] = banned(bi, i, j) ? -std::numeric_limits<double>::infinity()
                                   : dot / std::sqrt(double(d)) + additive(bi, h, i, j);
          mx = std::max(mx, sc[j]);
        }
        double z = 0;
        for (double& x : sc) z += (x = std::exp(x - mx));
        for (int64_t j = 0; j < s; ++j) {
          sc[j] /= z;
          r.weights[(bi * l + i) * s + j] += sc[j] / double(heads);
          for (int64_t c = 0; c < d; ++c)
            concat[(bi * l + i) * e + h * d + c] += sc[j] * pv[(bi * s + j) * e + h * d + c];
        }
      }
  for (int64_t i = 0; i < n * l; ++i)
    for (int64_t o = 0; o < e; ++o) {
      double acc = bo[o];
      for (int64_t c = 0; c < e; ++c) acc += wo[o * e + c] * concat[i * e + c];
      r.out[i * e + o] = acc;
    }
  return r;
}

Tensor bool_mask(const std::vector<int64_t>& v, const Shape& shape) { return from_vector<int64_t>(v, shape).to(kBool); }

auto no_ban = [](int64_t, int64_t, int64_t) { return false; };
auto no_add = [](int64_t, int64_t, int64_t, int64_t) { return 0.0; };

TEST(MultiheadAttention, MatchesLoopOnBothPathsBatchFirst) {
  manual_seed(1);
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  m.to(kFloat64);
  Tensor q = randn({2, 3, 8}, kFloat64), k = randn({2, 5, 8}, kFloat64), v = randn({2, 5, 8}, kFloat64);
  RefOut ref = reference(m, q, k, v, no_ban, no_add);
  auto [out, w] = m.forward(q, k, v);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 8}));
  EXPECT_EQ(w.shape(), (Shape{2, 3, 5}));
  testing::expect_near_vec(out.to_vector<double>(), ref.out, 1e-10);
  testing::expect_near_vec(w.to_vector<double>(), ref.weights, 1e-10);
  auto [fused, none] = m.forward(q, k, v, nn::MHAForwardOptions().need_weights(false));
  EXPECT_FALSE(none.defined());
  testing::expect_near_vec(fused.to_vector<double>(), ref.out, 1e-10);
  // Per-head weights average to the returned ones.
  Tensor per_head = m.forward(q, k, v, {.average_attn_weights = false}).second;
  EXPECT_EQ(per_head.shape(), (Shape{2, 2, 3, 5}));
  testing::expect_near_vec(per_head.mean({1}).to_vector<double>(), ref.weights, 1e-12);
}

TEST(MultiheadAttention, KeyPaddingCausalAndAttnMasksInTorchsConvention) {
  manual_seed(2);
  nn::MultiheadAttention m(8, 2);  // [L, N, E]
  m.to(kFloat64);
  Tensor q = randn({4, 2, 8}, kFloat64), k = randn({4, 2, 8}, kFloat64), v = randn({4, 2, 8}, kFloat64);
  // Batch 0 ignores key 3, batch 1 keys 2 and 3 (true = padding).
  Tensor kpm = bool_mask({0, 0, 0, 1, 0, 0, 1, 1}, {2, 4});
  Tensor additive = randn({4, 4}, kFloat64);
  auto banned = [](int64_t b, int64_t i, int64_t j) { return j > i || j == 3 || (b == 1 && j == 2); };
  auto add_fn = [&](int64_t, int64_t, int64_t i, int64_t j) { return additive[i][j].item<double>(); };
  RefOut ref = reference(m, q.transpose(0, 1).contiguous(), k.transpose(0, 1).contiguous(),
                         v.transpose(0, 1).contiguous(), banned, add_fn);
  for (bool need_weights : {true, false}) {
    SCOPED_TRACE(need_weights ? "composed (need_weights)" : "fused");
    auto [out, w] = m.forward(
        q, k, v, {.key_padding_mask = kpm, .need_weights = need_weights, .attn_mask = additive, .is_causal = true});
    testing::expect_near_vec(out.transpose(0, 1).contiguous().to_vector<double>(), ref.out, 1e-10);
    if (need_weights) testing::expect_near_vec(w.to_vector<double>(), ref.weights, 1e-10);
  }
  // A bool attn_mask (true = banned) equals is_causal; a float key_padding_mask adds.
  Tensor causal = triu(ones({4, 4}, kBool), 1);
  Tensor kpm_float = masked_fill(zeros({2, 4}, kFloat64), kpm, Scalar(-std::numeric_limits<double>::infinity()));
  auto [out2, w2] = m.forward(q, k, v, {.key_padding_mask = kpm_float, .attn_mask = causal});
  auto [out3, w3] = m.forward(q, k, v, {.key_padding_mask = kpm, .is_causal = true});
  EXPECT_LT((out2 - out3).abs().max().item<double>(), 1e-12);
  // A per-head mask [N * H, L, S]: head 1 of batch 0 may not see key 0.
  Tensor per_head = zeros({4, 4, 4}, kBool);
  per_head[1].select(1, 0).fill_(true);
  Tensor o_fused = m.forward(q, k, v, {.need_weights = false, .attn_mask = per_head}).first;
  Tensor o_comp = m.forward(q, k, v, {.need_weights = true, .attn_mask = per_head}).first;
  EXPECT_LT((o_fused - o_comp).abs().max().item<double>(), 1e-10);
  EXPECT_GT((o_fused - m.forward(q, k, v).first).abs().max().item<double>(), 1e-6);
}

TEST(MultiheadAttention, SeparateKdimVdimAndTorchNames) {
  manual_seed(3);
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(6, 3).kdim(4).vdim(5).batch_first(true));
  EXPECT_EQ(testing::names_of(m.named_parameters()),
            (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias",
                                      "out_proj.weight", "out_proj.bias"}));
  nn::MultiheadAttention same(6, 3);
  EXPECT_EQ(testing::names_of(same.named_parameters()),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(same.in_proj_weight.shape(), (Shape{18, 6}));
  EXPECT_EQ(same.in_proj_bias.abs().max().item<double>(), 0.0);
  m.to(kFloat64);
  Tensor q = randn({2, 3, 6}, kFloat64), k = randn({2, 4, 4}, kFloat64), v = randn({2, 4, 5}, kFloat64);
  RefOut ref = reference(m, q, k, v, no_ban, no_add);
  testing::expect_near_vec(m.forward(q, k, v).first.to_vector<double>(), ref.out, 1e-10);
  // Unbatched [L, E].
  Tensor u = m.forward(q[1], k[1], v[1]).first;
  EXPECT_EQ(u.shape(), (Shape{3, 6}));
  EXPECT_LT((u - m.forward(q, k, v).first[1]).abs().max().item<double>(), 1e-12);
}

TEST(MultiheadAttention, GradientsMatchFiniteDifferences) {
  manual_seed(4);
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(4, 2).batch_first(true));
  m.to(kFloat64);
  Tensor kpm = bool_mask({0, 0, 1, 0, 0, 0}, {2, 3});
  for (bool need_weights : {true, false}) {
    SCOPED_TRACE(need_weights ? "composed" : "fused");
    EXPECT_TRUE(testing::module_gradcheck(
        m,
        [&](const std::vector<Tensor>& in) {
          auto [out, w] = m.forward(in[0], in[1], in[2],
                                    {.key_padding_mask = kpm, .need_weights = need_weights, .is_causal = true});
          return need_weights ? cat({out.flatten(), w.flatten()}) : out;
        },
        {randn({2, 3, 4}, kFloat64), randn({2, 3, 4}, kFloat64), randn({2, 3, 4}, kFloat64)}));
  }
}

TEST(MultiheadAttention, DropoutOnlyInTrainingAndSeveralInputsThroughContainers) {
  manual_seed(5);
  auto m = std::make_shared<nn::MultiheadAttention>(nn::MultiheadAttentionOptions(8, 2).dropout(0.5).batch_first(true));
  Tensor x = randn({2, 6, 8});
  m->eval();
  Tensor a = m->forward(x);
  m->train();
  EXPECT_GT((m->forward(x) - a).abs().max().item<double>(), 1e-4);
  m->eval();
  // forward_inputs {q, k, v, key_padding_mask}: directly, in Sequential, checkpointed.
  Tensor kpm = zeros({2, 6}, kBool);
  kpm[0][5].fill_(true);
  Tensor want = m->forward(x, x, x, {.key_padding_mask = kpm, .need_weights = false}).first;
  EXPECT_LT(((*m)(x, x, x, kpm) - want).abs().max().item<double>(), 1e-6);
  auto seq = std::make_shared<nn::Sequential>(
      m, std::make_shared<nn::Checkpointed>(std::make_shared<nn::MultiheadAttention>(8, 2)));
  Tensor y = (*seq)(x, x, x, kpm);
  EXPECT_LT((y - seq->at<nn::Checkpointed>(1)->forward(want)).abs().max().item<double>(), 1e-6);
  // Checkpointed with several inputs gives the same gradients as without.
  auto inner = std::make_shared<nn::MultiheadAttention>(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  nn::Checkpointed ck(inner);
  Tensor xq = x.detach().requires_grad_(true);
  (*inner)(xq, x, x, kpm).sum().backward();
  Tensor g_plain = xq.grad().clone(), w_plain = inner->in_proj_weight.grad().clone();
  xq.set_grad(Tensor());
  inner->zero_grad();
  ck(xq, x, x, kpm).sum().backward();
  EXPECT_LT((xq.grad() - g_plain).abs().max().item<double>(), 1e-5);
  EXPECT_LT((inner->in_proj_weight.grad() - w_plain).abs().max().item<double>(), 1e-5);
}

TEST(MultiheadAttention, AddBiasKvAndZeroAttnAppendKeysOpenToEveryQuery) {
  manual_seed(6);
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(4, 2).batch_first(true).add_bias_kv(true).add_zero_attn(true));
  m.to(kFloat64);
  ASSERT_TRUE(m.bias_k.defined() && m.bias_v.defined());
  EXPECT_EQ(m.bias_k.shape(), (Shape{1, 1, 4}));
  int named = 0;
  for (const auto& [name, t] : m.named_parameters()) named += name == "bias_k" || name == "bias_v";
  EXPECT_EQ(named, 2);
  EXPECT_NE(m.bias_k.abs().sum().item<double>(), 0.0);  // xavier_normal_, as PyTorch
  // Causal: query 0 sees key 0 and the two appended keys; the rest of its row is 0.
  Tensor x = randn({2, 3, 4}, kFloat64);
  auto [out, w] = m.forward(x, x, x, {.need_weights = true, .is_causal = true});
  ASSERT_EQ(w.shape(), (Shape{2, 3, 5}));
  Vec row0 = w.select(1, 0).select(0, 0).to_vector<double>();
  EXPECT_GT(row0[0], 0.0);
  EXPECT_EQ(row0[1], 0.0);
  EXPECT_EQ(row0[2], 0.0);
  EXPECT_GT(row0[3], 0.0);
  EXPECT_GT(row0[4], 0.0);
  Tensor fused = m.forward(x, x, x, {.need_weights = false, .is_causal = true}).first;
  EXPECT_LT((fused - out).abs().max().item<double>(), 1e-12);
  // A fully padded sequence still attends the appended keys (PyTorch's result, not NaN).
  Tensor all_padded = ones({2, 3}, kBool);
  Tensor y = m.forward(x, x, x, {.key_padding_mask = all_padded, .need_weights = false}).first;
  EXPECT_TRUE(isfinite(y).all().item<bool>());
  // Gradients reach bias_k and bias_v, and match finite differences.
  m.forward(x, x, x, {.need_weights = false}).first.sum().backward();
  EXPECT_GT(m.bias_v.grad().abs().sum().item<double>(), 0.0);
  Tensor kpm = bool_mask({0, 0, 1, 0, 0, 0}, {2, 3});
  EXPECT_TRUE(testing::module_gradcheck(
      m,
      [&](const std::vector<Tensor>& in) {
        auto [o, wt] = m.forward(in[0], in[1], in[2], {.key_padding_mask = kpm, .need_weights = true});
        return cat({o.flatten(), wt.flatten()});
      },
      {randn({2, 3, 4}, kFloat64), randn({2, 3, 4}, kFloat64), randn({2, 3, 4}, kFloat64)}));
  // Masks are checked against the given keys, not the appended ones.
  expect_error(
      [&] {
        m.forward(x, x, x, {.attn_mask = zeros({3, 5}, kBool)});
      },
      {"MultiheadAttention", "attn_mask", "[L, S] = [3, 3]", "[3, 5]"});
  EXPECT_NE(m.repr().find("add_bias_kv=True"), std::string::npos);
}

TEST(MultiheadAttention, BadInputNamesTheModuleAndShapes) {
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  Tensor x = randn({2, 3, 8});
  expect_error([&] { m.forward(randn({2, 3, 6}), x, x); }, {"MultiheadAttention", "embed_dim 8", "[2, 3, 6]"});
  expect_error([&] { m.forward(x, randn({2, 4, 8}), x); }, {"MultiheadAttention", "key and value", "[2, 4, 8]"});
  expect_error(
      [&] {
        m.forward(x, x, x, {.key_padding_mask = zeros({2, 4}, kBool)});
      },
      {"MultiheadAttention", "key_padding_mask", "[2, 3]", "[2, 4]"});
  expect_error(
      [&] {
        m.forward(x, x, x, {.attn_mask = zeros({3, 4}, kBool)});
      },
      {"MultiheadAttention", "attn_mask", "[L, S] = [3, 3]", "[3, 4]"});
  expect_error(
      [&] {
        m.forward(x, x, x, {.key_padding_mask = zeros({2, 3}, kInt64)});
      },
      {"MultiheadAttention", "key_padding_mask", "bool"});
  expect_error([&] { m.forward_inputs({x, x}); }, {"MultiheadAttention", "2 inputs"});
  expect_error([] { nn::MultiheadAttention(10, 3); }, {"MultiheadAttention", "divisible", "10", "3"});
}

}  // namespace
}  // namespace anvil
