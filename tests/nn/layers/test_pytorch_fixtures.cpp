// MultiheadAttention, LSTM and GRU with weights PyTorch made give PyTorch's
// outputs to 1e-5: fixtures/pytorch_mha_rnn.safetensors holds each module's
// state_dict (PyTorch's names), its inputs and PyTorch's outputs, written by
// bench/pytorch/rnn_mha_reference.py (provenance in the file's metadata).
// The weights go in through load_state_dict, as a ported model's would.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/ops.h"
#include "nn/layers/multihead_attention.h"
#include "nn/layers/rnn.h"
#include "nn/serialize/safetensors.h"

namespace anvil::nn {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  StateDict all;
  Tensor get(const std::string& name) const {
    for (const auto& [k, t] : all)
      if (k == name) return t;
    ADD_FAILURE() << "fixture has no tensor " << name;
    return {};
  }
  // The tensors named "<prefix>.<key>" whose key is a module parameter of
  // `module`, under their module names.
  StateDict weights_for(const std::string& prefix, const Module& module) const {
    StateDict out;
    for (const auto& [name, _] : module.state_dict()) out.emplace_back(name, get(prefix + "." + name));
    return out;
  }
};

const Fixture& fixture() {
  static const Fixture f{
      serialize::load_safetensors(fs::path(__FILE__).parent_path() / "fixtures/pytorch_mha_rnn.safetensors")};
  return f;
}

::testing::AssertionResult close(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shape " << got.shape_str() << " vs PyTorch's " << want.shape_str();
  const double diff = (got.to(kFloat64) - want.to(kFloat64)).abs().max().item<double>();
  if (diff <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "max |anvil - PyTorch| = " << diff << " > " << tol;
}

TEST(PyTorchFixtures, MultiheadAttentionGivesPyTorchsOutputs) {
  const Fixture& f = fixture();
  MultiheadAttention mha(MultiheadAttentionOptions().embed_dim(16).num_heads(4).batch_first(true));
  mha.load_state_dict(f.weights_for("mha", mha));
  mha.eval();
  const Tensor padding = f.get("mha.key_padding_mask").to(kBool);  // true: ignore that key (PyTorch's sense)
  auto [out, weights] = mha.forward(f.get("mha.query"), f.get("mha.key"), f.get("mha.value"),
                                    MHAForwardOptions().key_padding_mask(padding));
  EXPECT_TRUE(close(out, f.get("mha.out")));
  EXPECT_TRUE(close(weights, f.get("mha.weights")));
  const Tensor q = f.get("mha.query");
  const Tensor causal = triu(ones({5, 5}, TensorOptions().dtype(kBool)), 1);  // true: may not attend
  auto [causal_out, none] = mha.forward(q, q, q, MHAForwardOptions().attn_mask(causal).need_weights(false));
  EXPECT_FALSE(none.defined());
  EXPECT_TRUE(close(causal_out, f.get("mha.causal_out")));
}

TEST(PyTorchFixtures, MultiheadAttentionAddBiasKvGivesPyTorchsOutputs) {
  const Fixture& f = fixture();
  MultiheadAttention mha(MultiheadAttentionOptions().embed_dim(16).num_heads(4).add_bias_kv(true));
  mha.load_state_dict(f.weights_for("mha_bias_kv", mha));
  mha.eval();
  ASSERT_EQ(mha.bias_k.shape(), (Shape{1, 1, 16}));
  auto [out, weights] = mha.forward(f.get("mha_bias_kv.query"), f.get("mha_bias_kv.key"), f.get("mha_bias_kv.value"),
                                    MHAForwardOptions().attn_mask(f.get("mha_bias_kv.attn_mask")));
  EXPECT_TRUE(close(out, f.get("mha_bias_kv.out")));
  EXPECT_TRUE(close(weights, f.get("mha_bias_kv.weights")));  // [N, L, S + 1]
}

TEST(PyTorchFixtures, MultiheadAttentionAddBiasKvAndZeroAttnWithMasksGivesPyTorchsOutputs) {
  const Fixture& f = fixture();
  MultiheadAttention mha(
      MultiheadAttentionOptions().embed_dim(16).num_heads(4).batch_first(true).add_bias_kv(true).add_zero_attn(true));
  mha.load_state_dict(f.weights_for("mha_both", mha));
  mha.eval();
  const Tensor q = f.get("mha_both.query"), k = f.get("mha_both.key"), v = f.get("mha_both.value");
  const auto masks = MHAForwardOptions()
                         .key_padding_mask(f.get("mha_both.key_padding_mask").to(kBool))
                         .attn_mask(f.get("mha_both.attn_mask").to(kBool));
  auto [out, weights] = mha.forward(q, k, v, MHAForwardOptions(masks).average_attn_weights(false));
  EXPECT_TRUE(close(out, f.get("mha_both.out")));
  EXPECT_TRUE(close(weights, f.get("mha_both.weights")));  // [N, H, L, S + 2]
  auto [fused, none] = mha.forward(q, k, v, MHAForwardOptions(masks).need_weights(false));
  EXPECT_FALSE(none.defined());
  EXPECT_TRUE(close(fused, f.get("mha_both.fused_out")));
}

TEST(PyTorchFixtures, MultiheadAttentionAddZeroAttnWithOtherKvDimsGivesPyTorchsOutputs) {
  const Fixture& f = fixture();
  MultiheadAttention mha(
      MultiheadAttentionOptions().embed_dim(16).num_heads(4).batch_first(true).add_zero_attn(true).kdim(10).vdim(12));
  mha.load_state_dict(f.weights_for("mha_zero", mha));
  mha.eval();
  auto [out, weights] = mha.forward(f.get("mha_zero.query"), f.get("mha_zero.key"), f.get("mha_zero.value"),
                                    MHAForwardOptions().key_padding_mask(f.get("mha_zero.key_padding_mask").to(kBool)));
  EXPECT_TRUE(close(out, f.get("mha_zero.out")));
  EXPECT_TRUE(close(weights, f.get("mha_zero.weights")));  // [N, L, S + 1]
}

TEST(PyTorchFixtures, LstmGivesPyTorchsOutputs) {
  const Fixture& f = fixture();
  LSTM lstm(LSTMOptions(6, 8).num_layers(2).bidirectional(true).batch_first(true));
  lstm.load_state_dict(f.weights_for("lstm", lstm));
  lstm.eval();
  auto [out, state] = lstm.forward(f.get("lstm.input"), std::make_tuple(f.get("lstm.h0"), f.get("lstm.c0")));
  EXPECT_TRUE(close(out, f.get("lstm.out")));
  EXPECT_TRUE(close(std::get<0>(state), f.get("lstm.hn")));
  EXPECT_TRUE(close(std::get<1>(state), f.get("lstm.cn")));
}

TEST(PyTorchFixtures, GruGivesPyTorchsOutputs) {
  const Fixture& f = fixture();
  GRU gru(GRUOptions(6, 8).num_layers(2).bidirectional(true).batch_first(true));
  gru.load_state_dict(f.weights_for("gru", gru));
  gru.eval();
  auto [out, hn] = gru.forward(f.get("gru.input"), f.get("gru.h0"));
  EXPECT_TRUE(close(out, f.get("gru.out")));
  EXPECT_TRUE(close(hn, f.get("gru.hn")));
}

}  // namespace
}  // namespace anvil::nn
