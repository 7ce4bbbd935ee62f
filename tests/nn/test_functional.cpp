// nn::functional: the ops composed here (attention, BCE on probabilities,
// L1) against hand-computed values, and that the re-exports resolve.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/functional.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

namespace F = nn::functional;
using testing::expect_near_vec;

TEST(NnFunctional, ReExportsResolve) {
  manual_seed(120);
  Tensor x = randn({4, 5}), y = from_vector<int64_t>({0, 4, 2, 1});
  EXPECT_EQ(F::cross_entropy(x, y).item<double>(), cross_entropy(x, y).item<double>());
  EXPECT_EQ(F::relu(x).to_vector<double>(), relu(x).to_vector<double>());
  Tensor t = rand({4, 5});
  EXPECT_EQ(F::binary_cross_entropy_with_logits(x, t, F::Reduction::Sum).item<double>(),
            binary_cross_entropy_with_logits(x, t, Reduction::Sum).item<double>());
  Tensor img = randn({1, 2, 3, 3}), w = randn({4, 2, 3, 3}), b = randn({4});
  Tensor want = conv2d(img, w, b, Conv2dOptions{.padding = {1, 1}});
  // libtorch's form: the bias in the options, chained setters.
  Tensor got = F::conv2d(img, w, F::Conv2dFuncOptions().stride(1).padding(1).bias(b));
  EXPECT_EQ(got.shape(), (Shape{1, 4, 3, 3}));
  EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>());
  // The earlier forms: the bias as an argument, the options as a struct.
  F::Conv2dFuncOptions conv;
  conv.padding = {1, 1};
  EXPECT_EQ(F::conv2d(img, w, b, conv).to_vector<double>(), want.to_vector<double>());
  EXPECT_EQ(F::conv2d(img, w, b, Conv2dOptions{.padding = {1, 1}}).to_vector<double>(), want.to_vector<double>());
  EXPECT_EQ(F::conv2d(img, w, F::Conv2dFuncOptions().stride(2)).shape(), (Shape{1, 4, 1, 1}));
  testing::expect_error([&] { F::conv2d(img, w, b, F::Conv2dFuncOptions().bias(b)); }, {"conv2d", "bias", "both"});
}

TEST(NnFunctional, BinaryCrossEntropyOnProbabilities) {
  manual_seed(121);
  Tensor p = rand({6}, kFloat64) * 0.98 + 0.01, t = rand({6}, kFloat64);
  auto pv = p.to_vector<double>(), tv = t.to_vector<double>();
  std::vector<double> want;
  double mean = 0;
  for (size_t i = 0; i < pv.size(); ++i) {
    want.push_back(-(tv[i] * std::log(pv[i]) + (1 - tv[i]) * std::log(1 - pv[i])));
    mean += want.back() / pv.size();
  }
  expect_near_vec(F::binary_cross_entropy(p, t, F::Reduction::None).to_vector<double>(), want, 1e-12);
  EXPECT_NEAR(F::binary_cross_entropy(p, t).item<double>(), mean, 1e-12);
  // log(0) is clamped at -100: finite, as PyTorch.
  EXPECT_NEAR(F::binary_cross_entropy(tensor({0.0}, kFloat64), tensor({1.0}, kFloat64)).item<double>(), 100.0, 1e-9);
  EXPECT_TRUE(
      testing::gradcheck([&](const std::vector<Tensor>& in) { return F::binary_cross_entropy(in[0], t); }, {p}));
  testing::expect_error([&] { F::binary_cross_entropy(p, t.view({2, 3})); }, {"binary_cross_entropy", "[6]", "[2, 3]"});
}

TEST(NnFunctional, L1Loss) {
  Tensor a = tensor({1.0, -2.0, 3.0}), b = tensor({0.5, 1.0, 3.0});
  EXPECT_NEAR(F::l1_loss(a, b).item<double>(), 3.5 / 3, 1e-6);
  EXPECT_NEAR(F::l1_loss(a, b, F::Reduction::Sum).item<double>(), 3.5, 1e-6);
}

TEST(NnFunctional, AttentionMasks) {
  manual_seed(122);
  Tensor q = randn({2, 3, 4}, kFloat64), k = randn({2, 5, 4}, kFloat64), v = randn({2, 5, 6}, kFloat64);
  // Naive: softmax over allowed keys of q.k * scale, times v.
  auto naive = [&](const std::vector<std::vector<bool>>& allowed, double scale) {
    auto qv = q.to_vector<double>(), kv = k.to_vector<double>(), vv = v.to_vector<double>();
    std::vector<double> out;
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 3; ++i) {
        std::vector<double> w(5, 0.0);
        double z = 0;
        for (int j = 0; j < 5; ++j) {
          if (!allowed[i][j]) continue;
          double dot = 0;
          for (int d = 0; d < 4; ++d) dot += qv[(b * 3 + i) * 4 + d] * kv[(b * 5 + j) * 4 + d];
          z += (w[j] = std::exp(dot * scale));
        }
        for (int e = 0; e < 6; ++e) {
          double acc = 0;
          for (int j = 0; j < 5; ++j) acc += w[j] / z * vv[(b * 5 + j) * 6 + e];
          out.push_back(acc);
        }
      }
    return out;
  };
  std::vector<std::vector<bool>> all(3, std::vector<bool>(5, true)), causal = all, custom = all;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) causal[i][j] = j <= i;
  custom[0][1] = custom[1][4] = custom[2][0] = custom[2][2] = false;
  expect_near_vec(F::scaled_dot_product_attention(q, k, v).to_vector<double>(), naive(all, 0.5), 1e-12, "plain");
  expect_near_vec(F::scaled_dot_product_attention(q, k, v, {.is_causal = true}).to_vector<double>(), naive(causal, 0.5),
                  1e-12, "causal");
  expect_near_vec(F::scaled_dot_product_attention(q, k, v, {.scale = 0.1}).to_vector<double>(), naive(all, 0.1), 1e-12,
                  "scale");
  std::vector<uint8_t> bits;
  std::vector<double> additive;
  for (auto& row : custom)
    for (bool b : row) bits.push_back(b), additive.push_back(b ? 0.0 : -INFINITY);
  Tensor bool_mask = from_vector(bits, {3, 5}).to(kBool);
  Tensor float_mask = from_vector(additive, {3, 5});
  expect_near_vec(F::scaled_dot_product_attention(q, k, v, {.attn_mask = bool_mask}).to_vector<double>(),
                  naive(custom, 0.5), 1e-12, "bool mask");
  expect_near_vec(F::scaled_dot_product_attention(q, k, v, {.attn_mask = float_mask}).to_vector<double>(),
                  naive(custom, 0.5), 1e-12, "float mask");
}

}  // namespace
}  // namespace anvil
