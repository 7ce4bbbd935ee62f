// nn::CausalSelfAttention and nn::TransformerBlock: attention against a
// naive host computation, causality, names, dropout modes, gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/layers/embedding.h"
#include "nn/layers/transformer.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_near_vec;
using testing::module_gradcheck;
using testing::names_of;

// rows [R, in] @ w^T [in, out] + b, on host vectors.
std::vector<double> host_linear(const std::vector<double>& x, int64_t rows, const nn::Linear& fc) {
  auto w = fc.weight.to_vector<double>(), b = fc.bias.to_vector<double>();
  std::vector<double> y(rows * fc.out_features);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < fc.out_features; ++j) {
      double s = b[j];
      for (int64_t k = 0; k < fc.in_features; ++k) s += x[r * fc.in_features + k] * w[j * fc.in_features + k];
      y[r * fc.out_features + j] = s;
    }
  return y;
}

std::vector<double> naive_attention(const Tensor& xt, const nn::CausalSelfAttention& attn) {
  const int64_t B = xt.size(0), T = xt.size(1), C = xt.size(2), H = attn.options.n_head, D = C / H;
  auto qkv = host_linear(xt.to_vector<double>(), B * T, *attn.qkv);  // [B, T, 3C]
  std::vector<double> y(B * T * C);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        auto at = [&](int64_t s, int64_t part, int64_t d) { return qkv[(b * T + s) * 3 * C + part * C + h * D + d]; };
        std::vector<double> score(t + 1);
        double mx = -INFINITY, z = 0;
        for (int64_t s = 0; s <= t; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += at(t, 0, d) * at(s, 1, d);
          score[s] = dot / std::sqrt(static_cast<double>(D));
          mx = std::max(mx, score[s]);
        }
        for (double& v : score) z += (v = std::exp(v - mx));
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (int64_t s = 0; s <= t; ++s) acc += score[s] / z * at(s, 2, d);
          y[(b * T + t) * C + h * D + d] = acc;
        }
      }
  return host_linear(y, B * T, *attn.proj);
}

TEST(NnAttention, ForwardMatchesNaiveCausalAttention) {
  manual_seed(80);
  nn::CausalSelfAttention attn({.n_embd = 6, .n_head = 2});
  attn.to(kFloat64);
  Tensor x = randn({2, 5, 6}, kFloat64);
  Tensor y = attn(x);
  EXPECT_EQ(y.shape(), (Shape{2, 5, 6}));
  expect_near_vec(y.to_vector<double>(), naive_attention(x, attn), 1e-10);
  EXPECT_EQ(names_of(attn.named_parameters()),
            (std::vector<std::string>{"qkv.weight", "qkv.bias", "proj.weight", "proj.bias"}));
  EXPECT_EQ(attn.qkv->weight.shape(), (Shape{18, 6}));
}

// Output at positions <= t must not depend on inputs after t.
void expect_causal(nn::Module& m, int64_t T, int64_t C) {
  Tensor x = randn({2, T, C});
  Tensor y = m.forward(x);
  for (int64_t t = 0; t + 1 < T; ++t) {
    Tensor x2 = x.clone();
    {
      NoGradGuard ng;
      x2.narrow(1, t + 1, T - t - 1).copy_(randn({2, T - t - 1, C}) * 5.0);
    }
    Tensor y2 = m.forward(x2);
    expect_near_vec(y2.narrow(1, 0, t + 1).contiguous().to_vector<double>(),
                    y.narrow(1, 0, t + 1).contiguous().to_vector<double>(), 1e-6,
                    "prefix up to t=" + std::to_string(t));
    EXPECT_GT(testing::max_abs_diff(y2.narrow(1, t + 1, 1), y.narrow(1, t + 1, 1)), 1e-3)
        << "position " << t + 1 << " should see its own changed input";
  }
}

TEST(NnAttention, IsCausal) {
  manual_seed(81);
  nn::CausalSelfAttention attn({.n_embd = 8, .n_head = 4});
  expect_causal(attn, 6, 8);
  nn::TransformerBlock block({.n_embd = 8, .n_head = 2});
  expect_causal(block, 5, 8);
}

TEST(NnAttention, DropoutOnlyInTraining) {
  manual_seed(82);
  nn::CausalSelfAttention attn({.n_embd = 8, .n_head = 2, .dropout = 0.5});
  Tensor x = randn({2, 4, 8});
  attn.eval();
  auto a = attn(x).to_vector<double>();
  EXPECT_EQ(attn(x).to_vector<double>(), a);  // deterministic
  attn.train();
  EXPECT_NE(attn(x).to_vector<double>(), a);
}

TEST(NnAttention, GradientsMatchFiniteDifferences) {
  manual_seed(83);
  nn::CausalSelfAttention attn({.n_embd = 4, .n_head = 2});
  attn.to(kFloat64);
  EXPECT_TRUE(module_gradcheck(attn, randn({1, 3, 4}, kFloat64)));
}

TEST(NnTransformerBlock, StructureNamesAndResiduals) {
  manual_seed(84);
  nn::TransformerBlock block({.n_embd = 8, .n_head = 2});
  EXPECT_EQ(names_of(block.named_parameters()),
            (std::vector<std::string>{"ln1.weight", "ln1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
                                      "attn.proj.bias", "ln2.weight", "ln2.bias", "mlp.0.weight", "mlp.0.bias",
                                      "mlp.2.weight", "mlp.2.bias"}));
  EXPECT_EQ(block.mlp->at<nn::Linear>(0)->weight.shape(), (Shape{32, 8}));
  Tensor x = randn({2, 3, 8});
  Tensor h = x + block.attn->forward(block.ln1->forward(x));
  Tensor want = h + block.mlp->forward(block.ln2->forward(h));
  expect_near_vec(block(x).to_vector<double>(), want.to_vector<double>(), 1e-6);
}

TEST(NnTransformerBlock, GradientsMatchFiniteDifferences) {
  manual_seed(85);
  nn::TransformerBlock block({.n_embd = 4, .n_head = 2, .mlp_ratio = 1});
  block.to(kFloat64);
  EXPECT_TRUE(module_gradcheck(block, randn({1, 3, 4}, kFloat64)));
}

// The layers train together: a two-block GPT memorises one short sequence
// (next-token prediction) with plain SGD.
struct TinyGpt : nn::Module {
  std::shared_ptr<nn::Embedding> wte, wpe;
  std::shared_ptr<nn::Sequential> blocks;
  std::shared_ptr<nn::LayerNorm> ln_f;
  std::shared_ptr<nn::Linear> head;
  TinyGpt(int64_t vocab, int64_t steps, const nn::TransformerOptions& o) : nn::Module("TinyGpt") {
    wte = register_module("wte", std::make_shared<nn::Embedding>(vocab, o.n_embd));
    wpe = register_module("wpe", std::make_shared<nn::Embedding>(steps, o.n_embd));
    blocks = register_module("blocks", std::make_shared<nn::Sequential>());
    for (int i = 0; i < 2; ++i) blocks->push_back(std::make_shared<nn::TransformerBlock>(o));
    ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(o.n_embd));
    head = register_module("head", std::make_shared<nn::Linear>(o.n_embd, vocab, false));
  }
  Tensor forward(const Tensor& idx) override {  // [B, T] -> logits [B, T, vocab]
    Tensor pos = arange(static_cast<double>(idx.size(1)), kInt64);
    return head->forward(ln_f->forward(blocks->forward(wte->forward(idx) + wpe->forward(pos))));
  }
};

TEST(NnTransformerBlock, TinyGptMemorisesASequence) {
  manual_seed(86);
  const int64_t vocab = 7, T = 8;
  TinyGpt gpt(vocab, T, {.n_embd = 16, .n_head = 2});
  Tensor seq = from_vector<int64_t>({3, 1, 4, 1, 5, 2, 6, 5, 3}, {1, T + 1});
  Tensor x = seq.narrow(1, 0, T), y = seq.narrow(1, 1, T).contiguous();
  auto loss_of = [&] { return cross_entropy(gpt.forward(x).reshape({T, vocab}), y.reshape({T})); };
  const double first = loss_of().item<double>();
  for (int step = 0; step < 150; ++step) {
    gpt.zero_grad();
    loss_of().backward();
    NoGradGuard ng;
    for (Tensor& p : gpt.parameters()) p.sub_(p.grad() * 0.1);
  }
  const double last = loss_of().item<double>();
  EXPECT_GT(first, 1.5);
  EXPECT_LT(last, 0.1) << "loss went from " << first << " to " << last;
}

TEST(NnAttention, BadOptionsAndInput) {
  testing::expect_error([] { nn::CausalSelfAttention({.n_embd = 6, .n_head = 4}); },
                        {"CausalSelfAttention", "n_embd 6", "n_head 4"});
  nn::CausalSelfAttention attn({.n_embd = 4, .n_head = 2});
  testing::expect_error([&] { attn(randn({3, 4})); }, {"CausalSelfAttention", "[B, T, 4]", "[3, 4]"});
}

}  // namespace
}  // namespace anvil
