// The fused scaled_dot_product_attention (core/ops/nn/attention.cpp, CPU
// kernels in kernels/cpu/attention*.cpp): forward against a naive float64
// loop and against the composed matmul/softmax path, gradients against finite
// differences (float64) and against autograd through the composed path, every
// mask kind, dropout (the same mask as the math path's under one seed), odd lengths that leave partial tiles, head dims
// up to 256, fully masked rows, 16-bit inputs, broadcasting, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/core/ops/nn_test_util.h"
#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::gradcheck;

struct Dims {
  int64_t b, h, l, s, e, ev;
};

std::string text(const Dims& d) {
  return "B=" + std::to_string(d.b) + " H=" + std::to_string(d.h) + " L=" + std::to_string(d.l) +
         " S=" + std::to_string(d.s) + " E=" + std::to_string(d.e) + " Ev=" + std::to_string(d.ev);
}

// softmax(q k^T * scale + mask) v in double over host values; q, k, v
// [B, H, *, *]; mask (optional) broadcast to [B, H, L, S] (bool: may attend;
// floating: added). A row with no allowed key is 0.
std::vector<double> naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                                    bool causal) {
  const int64_t B = q.size(0), H = q.size(1), L = q.size(2), S = k.size(2), E = q.size(3), Ev = v.size(3);
  const auto qv = q.to(kFloat64).to_vector<double>(), kv = k.to(kFloat64).to_vector<double>(),
             vv = v.to(kFloat64).to_vector<double>();
  std::vector<double> allowed(static_cast<size_t>(B * H * L * S), 1.0), added(allowed.size(), 0.0);
  if (mask.defined()) {
    Tensor m = mask.expand({B, H, L, S}).contiguous();
    if (mask.dtype() == kBool)
      allowed = m.to(kFloat64).to_vector<double>();
    else
      added = m.to(kFloat64).to_vector<double>();
  }
  std::vector<double> out;
  for (int64_t n = 0; n < B * H; ++n)
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> s(static_cast<size_t>(S), -INFINITY);
      double mx = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        const size_t mi = static_cast<size_t>((n * L + i) * S + j);
        if (allowed[mi] == 0.0 || (causal && j > i)) continue;
        double dot = 0;
        for (int64_t d = 0; d < E; ++d) dot += qv[(n * L + i) * E + d] * kv[(n * S + j) * E + d];
        s[j] = dot * scale + added[mi];
        mx = std::max(mx, s[j]);
      }
      double z = 0;
      for (int64_t j = 0; j < S; ++j) z += mx == -INFINITY ? 0.0 : std::exp(s[j] - mx);
      for (int64_t d = 0; d < Ev; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < S; ++j)
          if (z > 0) acc += std::exp(s[j] - mx) / z * vv[(n * S + j) * Ev + d];
        out.push_back(acc);
      }
    }
  return out;
}

// The math path written out in the test (matmul, mask, softmax, matmul).
Tensor composed_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale,
                          bool causal) {
  Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;
  if (causal) {
    Tensor future = gt(arange(static_cast<double>(k.size(-2)), TensorOptions().dtype(kInt64)).unsqueeze(0),
                       arange(static_cast<double>(q.size(-2)), TensorOptions().dtype(kInt64)).unsqueeze(1));
    scores = masked_fill(scores, future, -INFINITY);
  }
  if (mask.defined())
    scores = mask.dtype() == kBool ? masked_fill(scores, logical_not(mask), -INFINITY) : scores + mask;
  return matmul(softmax(scores, -1), v);
}

Tensor key_padding_mask(int64_t b, int64_t s, uint64_t seed) {
  // Batch row r keeps its first s - r keys (at least one).
  std::vector<uint8_t> bits;
  for (int64_t r = 0; r < b; ++r)
    for (int64_t j = 0; j < s; ++j) bits.push_back(j < std::max<int64_t>(1, s - r - static_cast<int64_t>(seed % 3)));
  return from_vector(bits, {b, 1, 1, s}).to(kBool);
}

Tensor additive_mask(int64_t l, int64_t s) {
  manual_seed(l * 1000 + s);
  Tensor m = randn({l, s}, kFloat64);
  return masked_fill(m, gt(rand({l, s}, kFloat64), 0.8), -INFINITY);  // some keys forbidden outright
}

// |got - want| <= atol + rtol * |want| everywhere, compared in double.
::testing::AssertionResult close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape())
    return ::testing::AssertionFailure() << "shapes " << got.shape_str() << " and " << want.shape_str();
  const auto a = got.to(kFloat64).to_vector<double>(), b = want.to(kFloat64).to_vector<double>();
  size_t worst = 0;
  double worst_excess = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double excess = std::abs(a[i] - b[i]) - (atol + rtol * std::abs(b[i]));
    if (!(excess <= 0) && !(excess <= worst_excess)) worst = i, worst_excess = std::isnan(excess) ? INFINITY : excess;
  }
  if (worst_excess == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "element " << worst << ": got " << a[worst] << ", want " << b[worst]
                                       << " (rtol " << rtol << ", atol " << atol << ")";
}

AttentionOptions opts(const Tensor& mask, bool causal) {
  AttentionOptions o;
  o.attn_mask = mask;
  o.is_causal = causal;
  return o;
}

TEST(NnAttention, ForwardMatchesNaiveLoopInFloat64) {
  manual_seed(1);
  for (const Dims& d : {Dims{1, 1, 1, 1, 8, 8}, Dims{2, 3, 17, 17, 8, 5}, Dims{1, 2, 130, 70, 64, 64},
                        Dims{1, 1, 17, 200, 80, 80}, Dims{2, 1, 130, 130, 256, 256}, Dims{1, 2, 1, 130, 64, 16}}) {
    Tensor q = randn({d.b, d.h, d.l, d.e}, kFloat64), k = randn({d.b, d.h, d.s, d.e}, kFloat64),
           v = randn({d.b, d.h, d.s, d.ev}, kFloat64);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d.e));
    const Tensor padding = key_padding_mask(d.b, d.s, static_cast<uint64_t>(d.l));
    const Tensor additive = additive_mask(d.l, d.s);
    struct Case {
      const char* name;
      Tensor mask;
      bool causal;
    };
    for (const Case& c : {Case{"plain", {}, false}, Case{"causal", {}, true}, Case{"key padding", padding, false},
                          Case{"additive", additive, false}, Case{"causal + padding", padding, true}}) {
      SCOPED_TRACE(text(d) + " " + c.name);
      Tensor got = scaled_dot_product_attention(q, k, v, opts(c.mask, c.causal));
      ASSERT_EQ(got.shape(), Shape({d.b, d.h, d.l, d.ev}));
      testing::expect_near_vec(got.to_vector<double>(), naive_attention(q, k, v, c.mask, scale, c.causal), 1e-12,
                               c.name);
    }
  }
}

TEST(NnAttention, Float32MatchesComposedPath) {
  manual_seed(2);
  const Dims d{2, 4, 130, 97, 64, 48};
  Tensor q = randn({d.b, d.h, d.l, d.e}), k = randn({d.b, d.h, d.s, d.e}), v = randn({d.b, d.h, d.s, d.ev});
  const Tensor padding = key_padding_mask(d.b, d.s, 1);
  for (bool causal : {false, true}) {
    Tensor got = scaled_dot_product_attention(q, k, v, opts(padding, causal));
    Tensor want = composed_attention(q, k, v, padding, 1.0 / 8.0, causal);
    EXPECT_TRUE(close(got, want, 1e-5, 1e-6)) << "causal " << causal;
  }
  // A float32 additive mask reaches the kernel cast to q's dtype.
  Tensor additive = additive_mask(d.l, d.s).to(kFloat32);
  EXPECT_TRUE(close(scaled_dot_product_attention(q, k, v, opts(additive, false)),
                    composed_attention(q, k, v, additive, 1.0 / 8.0, false), 1e-5, 1e-6));
}

TEST(NnAttention, GradientsMatchFiniteDifferences) {
  manual_seed(3);
  struct Case {
    Dims d;
    bool causal;
    int mask;  // 0 none, 1 bool key padding, 2 additive
  };
  for (const Case& c :
       {Case{{1, 2, 5, 7, 3, 4}, false, 0}, Case{{1, 2, 5, 7, 3, 4}, true, 0}, Case{{2, 1, 4, 6, 3, 2}, false, 1},
        Case{{1, 1, 6, 5, 4, 3}, true, 2}, Case{{1, 1, 1, 3, 2, 2}, false, 0}}) {
    SCOPED_TRACE(text(c.d) + " causal " + std::to_string(c.causal) + " mask " + std::to_string(c.mask));
    const Dims& d = c.d;
    const Tensor mask = c.mask == 1 ? key_padding_mask(d.b, d.s, 0) : c.mask == 2 ? additive_mask(d.l, d.s) : Tensor();
    auto f = [&](const std::vector<Tensor>& in) {
      return scaled_dot_product_attention(in[0], in[1], in[2], opts(mask, c.causal));
    };
    EXPECT_TRUE(gradcheck(f, {randn({d.b, d.h, d.l, d.e}, kFloat64), randn({d.b, d.h, d.s, d.e}, kFloat64),
                              randn({d.b, d.h, d.s, d.ev}, kFloat64)}));
  }
}

// Many tiles (L and S past the 64 x 128 blocks, causal skipping whole tiles):
// the fused gradients equal autograd through the composed path.
TEST(NnAttention, GradientsMatchComposedPathAcrossTiles) {
  manual_seed(4);
  for (const Dims& d : {Dims{1, 2, 130, 300, 16, 24}, Dims{1, 1, 200, 200, 80, 8}}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(text(d) + " causal " + std::to_string(causal));
      const Tensor padding = key_padding_mask(d.b, d.s, 2);
      std::vector<Tensor> in = {randn({d.b, d.h, d.l, d.e}, kFloat64).requires_grad_(true),
                                randn({d.b, d.h, d.s, d.e}, kFloat64).requires_grad_(true),
                                randn({d.b, d.h, d.s, d.ev}, kFloat64).requires_grad_(true)};
      Tensor g = randn({d.b, d.h, d.l, d.ev}, kFloat64);
      const double scale = 0.3;
      AttentionOptions o = opts(padding, causal);
      o.scale = scale;
      auto fused = autograd::grad({(scaled_dot_product_attention(in[0], in[1], in[2], o) * g).sum()}, in);
      auto composed = autograd::grad({(composed_attention(in[0], in[1], in[2], padding, scale, causal) * g).sum()}, in);
      for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(close(fused[i], composed[i], 1e-10, 1e-12)) << "input " << i;
    }
  }
}

// A row with no allowed key: 0 output and no gradient (PyTorch's math path
// gives NaN; flash kernels give 0). The other rows are untouched by it.
TEST(NnAttention, FullyMaskedRowsGiveZeroAndNoGradient) {
  manual_seed(5);
  const int64_t L = 6, S = 9;
  std::vector<uint8_t> bits(static_cast<size_t>(L * S), 1);
  for (int64_t j = 0; j < S; ++j) bits[2 * S + j] = 0;  // row 2 sees nothing
  bits[4 * S + 3] = 0;
  Tensor mask = from_vector(bits, {L, S}).to(kBool);
  for (DType dt : {kFloat64, kFloat32}) {
    Tensor q = randn({2, 3, L, 8}, dt).requires_grad_(true), k = randn({2, 3, S, 8}, dt).requires_grad_(true),
           v = randn({2, 3, S, 5}, dt).requires_grad_(true);
    Tensor out = scaled_dot_product_attention(q, k, v, opts(mask, false));
    EXPECT_EQ(out.select(2, 2).abs().max().item<double>(), 0.0);
    EXPECT_TRUE(out.isfinite().all().item<bool>());
    Tensor g = randn(out.shape(), dt);
    (out * g).sum().backward();
    EXPECT_EQ(q.grad().select(2, 2).abs().max().item<double>(), 0.0);
    EXPECT_TRUE(q.grad().isfinite().all().item<bool>() && k.grad().isfinite().all().item<bool>() &&
                v.grad().isfinite().all().item<bool>());
    // k and v get the gradient of the other rows alone.
    std::vector<Tensor> in = {q.detach().requires_grad_(true), k.detach().requires_grad_(true),
                              v.detach().requires_grad_(true)};
    std::vector<int64_t> keep_rows = {0, 1, 3, 4, 5};
    Tensor keep = from_vector(keep_rows, {5});
    Tensor ref = composed_attention(in[0].index_select(2, keep), in[1], in[2], mask.index_select(0, keep),
                                    1 / std::sqrt(8.0), false);
    auto grads = autograd::grad({(ref * g.index_select(2, keep)).sum()}, {in[1], in[2]});
    const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
    EXPECT_TRUE(close(k.grad(), grads[0], tol, tol));
    EXPECT_TRUE(close(v.grad(), grads[1], tol, tol));
  }
  // Causal attention with fewer keys than queries has no empty row, but S = 0 has only empty rows.
  Tensor out = scaled_dot_product_attention(randn({1, 1, 3, 4}), randn({1, 1, 0, 4}), randn({1, 1, 0, 2}));
  EXPECT_EQ(out.shape(), Shape({1, 1, 3, 2}));
  EXPECT_EQ(out.abs().sum().item<double>(), 0.0);
}

// A NaN score makes its query's output row NaN, whether it falls in the first
// key tile (where the running maximum is still -inf) or a later one (S > 128:
// two tiles), as softmax of a row with a NaN is NaN; other heads are untouched.
TEST(NnAttention, NaNScoreMakesItsRowNaN) {
  manual_seed(11);
  const int64_t L = 5, S = 200;
  for (DType dt : {kFloat64, kFloat32}) {
    for (int64_t nan_key : {50, 150}) {
      Tensor q = randn({1, 2, L, 8}, dt), k = randn({1, 2, S, 8}, dt), v = randn({1, 2, S, 4}, dt);
      Tensor k_nan = k.clone();
      k_nan.select(1, 0).select(1, nan_key).fill_(NAN);  // head 0: a NaN score for every query
      Tensor out = scaled_dot_product_attention(q, k_nan, v);
      Tensor clean = scaled_dot_product_attention(q, k, v);
      EXPECT_TRUE(out.select(1, 0).isnan().all().item<bool>()) << dt << " key " << nan_key;
      EXPECT_TRUE(close(out.select(1, 1), clean.select(1, 1), 0, 0)) << dt << " key " << nan_key;
    }
  }
}

TEST(NnAttention, SixteenBitInputsAccumulateInFloat) {
  manual_seed(6);
  const Dims d{1, 2, 33, 70, 64, 32};
  Tensor q = randn({d.b, d.h, d.l, d.e}), k = randn({d.b, d.h, d.s, d.e}), v = randn({d.b, d.h, d.s, d.ev});
  const Tensor padding = key_padding_mask(d.b, d.s, 0);
  for (DType dt : {kBFloat16, kFloat16}) {
    Tensor q16 = q.to(dt), k16 = k.to(dt), v16 = v.to(dt);
    Tensor got = scaled_dot_product_attention(q16, k16, v16, opts(padding, true));
    EXPECT_EQ(got.dtype(), dt);
    // Against float64 math on the same (rounded) inputs: only the output's rounding differs.
    const double tol = dt == kBFloat16 ? 1e-2 : 2e-3;
    testing::expect_near_vec(got.to(kFloat64).to_vector<double>(), naive_attention(q16, k16, v16, padding, 0.125, true),
                             tol, dtype_name(dt));
    // The backward runs in float too and agrees with float32 gradients to the 16-bit rounding.
    std::vector<Tensor> in16 = {q16.requires_grad_(true), k16.requires_grad_(true), v16.requires_grad_(true)};
    std::vector<Tensor> in32 = {q16.detach().to(kFloat32).requires_grad_(true),
                                k16.detach().to(kFloat32).requires_grad_(true),
                                v16.detach().to(kFloat32).requires_grad_(true)};
    Tensor g = randn(got.shape()).to(dt);
    auto g16 = autograd::grad(
        {(scaled_dot_product_attention(in16[0], in16[1], in16[2], opts(padding, true)) * g).to(kFloat32).sum()}, in16);
    auto g32 = autograd::grad(
        {(scaled_dot_product_attention(in32[0], in32[1], in32[2], opts(padding, true)) * g.to(kFloat32)).sum()}, in32);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(g16[i].dtype(), dt);
      EXPECT_TRUE(close(g16[i], g32[i], 4 * tol, 4 * tol)) << dtype_name(dt) << " input " << i;
    }
  }
}

TEST(NnAttention, LeadingDimsBroadcastAndFlatten) {
  manual_seed(7);
  // 3-D, 5-D, and k/v shared across heads (their gradient sums over the heads).
  Tensor q3 = randn({3, 5, 4}, kFloat64), k3 = randn({3, 6, 4}, kFloat64), v3 = randn({3, 6, 2}, kFloat64);
  EXPECT_TRUE(
      close(scaled_dot_product_attention(q3, k3, v3), composed_attention(q3, k3, v3, {}, 0.5, false), 1e-12, 1e-12));
  Tensor q5 = randn({2, 2, 3, 5, 4}, kFloat64), k5 = randn({2, 2, 3, 6, 4}, kFloat64),
         v5 = randn({2, 2, 3, 6, 2}, kFloat64);
  Tensor m5 = rand({2, 1, 3, 1, 6}, kFloat64);
  EXPECT_TRUE(close(scaled_dot_product_attention(q5, k5, v5, opts(m5, true)),
                    composed_attention(q5, k5, v5, m5, 0.5, true), 1e-12, 1e-12));
  auto f = [](const std::vector<Tensor>& in) { return scaled_dot_product_attention(in[0], in[1], in[2]); };
  EXPECT_TRUE(
      gradcheck(f, {randn({2, 3, 4, 3}, kFloat64), randn({2, 1, 5, 3}, kFloat64), randn({1, 1, 5, 2}, kFloat64)}));
}

// Dropout stays in the fused kernels, drawing each probability's fate from
// Philox by its index: under one seed the output and the gradients equal the
// math path's (softmax, then dropout, then matmul; taken here through a mask
// that requires grad), across many tiles, causal or not.
TEST(NnAttention, FusedDropoutDropsWhatTheMathPathDrops) {
  for (const Dims& d : {Dims{2, 2, 70, 150, 16, 24}, Dims{1, 3, 9, 5, 4, 3}}) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(text(d) + " causal " + std::to_string(causal));
      manual_seed(12);
      const Tensor mask = randn({d.l, d.s}, kFloat64);  // finite: no fully masked row (the math path's NaN)
      std::vector<Tensor> in = {randn({d.b, d.h, d.l, d.e}, kFloat64).requires_grad_(true),
                                randn({d.b, d.h, d.s, d.e}, kFloat64).requires_grad_(true),
                                randn({d.b, d.h, d.s, d.ev}, kFloat64).requires_grad_(true)};
      const Tensor g = randn({d.b, d.h, d.l, d.ev}, kFloat64);
      AttentionOptions fused = opts(mask, causal), math = opts(mask.clone().requires_grad_(true), causal);
      fused.dropout_p = math.dropout_p = 0.3;
      manual_seed(99);
      const Tensor out_fused = scaled_dot_product_attention(in[0], in[1], in[2], fused);
      const auto grad_fused = autograd::grad({(out_fused * g).sum()}, in);
      manual_seed(99);
      const Tensor out_math = scaled_dot_product_attention(in[0], in[1], in[2], math);
      const auto grad_math = autograd::grad({(out_math * g).sum()}, in);
      EXPECT_TRUE(close(out_fused, out_math, 1e-10, 1e-12));
      for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(close(grad_fused[i], grad_math[i], 1e-10, 1e-12)) << "input " << i;
      // Dropout did act: without it the output differs.
      EXPECT_FALSE(close(out_fused, scaled_dot_product_attention(in[0], in[1], in[2], opts(mask, causal)), 1e-6, 1e-6));
    }
  }
}

// With the seed fixed inside the function, the dropped attention is a
// deterministic function: its fused backward checks against finite
// differences, and the composed backward (create_graph) applies the same mask.
TEST(NnAttention, FusedDropoutGradientsMatchFiniteDifferences) {
  manual_seed(13);
  for (bool causal : {false, true}) {
    auto f = [causal](const std::vector<Tensor>& in) {
      AttentionOptions o;
      o.is_causal = causal;
      o.dropout_p = 0.4;
      manual_seed(7);
      return scaled_dot_product_attention(in[0], in[1], in[2], o);
    };
    const std::vector<Tensor> in = {randn({1, 2, 5, 3}, kFloat64), randn({1, 2, 6, 3}, kFloat64),
                                    randn({1, 2, 6, 4}, kFloat64)};
    EXPECT_TRUE(gradcheck(f, in)) << "causal " << causal;
    EXPECT_TRUE(testing::gradgradcheck(f, in)) << "causal " << causal;
  }
}

TEST(NnAttention, MaskGradientsTakeTheComposedPath) {
  manual_seed(8);
  Tensor q = randn({1, 2, 8, 4}, kFloat64), k = randn({1, 2, 8, 4}, kFloat64), v = randn({1, 2, 8, 4}, kFloat64);
  // An additive mask that requires grad gets its gradient.
  Tensor mask = randn({8, 8}, kFloat64);
  auto f = [&](const std::vector<Tensor>& in) { return scaled_dot_product_attention(q, k, v, opts(in[0], false)); };
  EXPECT_TRUE(gradcheck(f, {mask}));
}

TEST(NnAttention, SecondOrderGradients) {
  manual_seed(9);
  auto f = [](const std::vector<Tensor>& in) {
    return scaled_dot_product_attention(in[0], in[1], in[2], opts({}, true));
  };
  EXPECT_TRUE(testing::gradgradcheck(
      f, {randn({1, 1, 3, 2}, kFloat64), randn({1, 1, 4, 2}, kFloat64), randn({1, 1, 4, 2}, kFloat64)}));
}

TEST(NnAttention, BadInputNamesOpShapesDtypesAndDevices) {
  Tensor q = randn({2, 3, 4}), k = randn({2, 5, 4}), v = randn({2, 5, 6});
  expect_error([&] { scaled_dot_product_attention(randn({4}), k, v); },
               {"scaled_dot_product_attention", "[4]", "q [..., L, E]"});
  expect_error(
      [&] {
        scaled_dot_product_attention(q, randn({2, 5, 3}), v);
      },
      {"scaled_dot_product_attention", "[2, 3, 4]", "[2, 5, 3]"});
  expect_error(
      [&] {
        scaled_dot_product_attention(q, k, randn({2, 4, 6}));
      },
      {"scaled_dot_product_attention", "[2, 5, 4]", "[2, 4, 6]"});
  expect_error([&] { scaled_dot_product_attention(q, k.to(kFloat64), v); },
               {"scaled_dot_product_attention", "float32", "float64"});
  expect_error([&] { scaled_dot_product_attention(q.to(kInt64), k.to(kInt64), v.to(kInt64)); },
               {"scaled_dot_product_attention", "int64"});
  expect_error(
      [&] {
        scaled_dot_product_attention(q, k, v, opts(randn({3, 4}), false));
      },
      {"scaled_dot_product_attention", "attn_mask", "[3, 4]", "[2, 3, 5]"});
  expect_error(
      [&] {
        scaled_dot_product_attention(q, k, v, opts(ones({3, 5}, TensorOptions().dtype(kInt32)), false));
      },
      {"scaled_dot_product_attention", "attn_mask", "int32"});
  expect_error(
      [&] {
        scaled_dot_product_attention(randn({2, 3, 4}), randn({3, 5, 4}), randn({3, 5, 6}));
      },
      {"scaled_dot_product_attention", "[2]", "[3]"});
  AttentionOptions o;
  o.dropout_p = 1.5;
  expect_error([&] { scaled_dot_product_attention(q, k, v, o); }, {"scaled_dot_product_attention", "dropout_p", "1.5"});
  expect_error(
      [&] {
        scaled_dot_product_attention(q, testing::fake_cuda_tensor({2, 5, 4}), v);
      },
      {"scaled_dot_product_attention", "cpu", "cuda"});
}

}  // namespace
}  // namespace anvil
