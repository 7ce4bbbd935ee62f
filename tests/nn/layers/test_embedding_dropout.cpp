// nn::Embedding (row lookup, init, gradients) and nn::Dropout (train/eval,
// scale, rate, seeding).
#include <gtest/gtest.h>

#include <cmath>

#include "nn/layers/dropout.h"
#include "nn/layers/embedding.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;

TEST(NnEmbedding, ForwardPicksRows) {
  manual_seed(40);
  nn::Embedding emb(10, 4);
  Tensor idx = from_vector<int64_t>({3, 0, 9, 3, 7, 1}, {2, 3});
  Tensor out = emb(idx);
  EXPECT_EQ(out.shape(), (Shape{2, 3, 4}));
  auto w = emb.weight.to_vector<double>(), o = out.to_vector<double>();
  auto iv = idx.to_vector<int64_t>();
  for (size_t i = 0; i < iv.size(); ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(o[i * 4 + j], w[iv[i] * 4 + j]) << "index " << i;
  EXPECT_EQ(emb.extra_repr(), "10, 4");
}

TEST(NnEmbedding, InitIsStandardNormal) {
  manual_seed(41);
  nn::Embedding emb(1000, 20);
  auto [mean, sd] = testing::mean_std(emb.weight);
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(sd, 1.0, 0.03);
}

TEST(NnEmbedding, GradientAddsUpRepeatedRows) {
  manual_seed(42);
  nn::Embedding emb(5, 3);
  Tensor idx = from_vector<int64_t>({1, 4, 1, 1});
  emb(idx).sum().backward();
  auto g = emb.weight.grad().to_vector<double>();
  const double count[] = {0, 3, 0, 0, 1};
  for (int r = 0; r < 5; ++r)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(g[r * 3 + j], count[r]) << "row " << r;
}

TEST(NnEmbedding, BadIndices) {
  nn::Embedding emb(5, 3);
  EXPECT_THROW(emb(from_vector<int64_t>({0, 5})), Error);
  expect_error([&] { emb(randn({2})); }, {"embedding", "int64"});
}

TEST(NnDropout, TrainingZeroesAtRateAndScalesTheRest) {
  manual_seed(43);
  nn::Dropout drop(0.3);
  Tensor x = rand({20000}) + 0.5;  // no zeros of its own
  auto xv = x.to_vector<double>(), yv = drop(x).to_vector<double>();
  int64_t zeros = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0) {
      ++zeros;
    } else {
      EXPECT_NEAR(yv[i], xv[i] / 0.7, 1e-5) << i;
    }
  }
  EXPECT_NEAR(static_cast<double>(zeros) / xv.size(), 0.3, 0.02);
}

TEST(NnDropout, EvalIsIdentityAndSeedsReplay) {
  manual_seed(44);
  nn::Dropout drop(0.5);
  Tensor x = randn({64});
  manual_seed(7);
  auto a = drop(x).to_vector<double>();
  manual_seed(7);
  auto b = drop(x).to_vector<double>();
  EXPECT_EQ(a, b);
  drop.eval();
  EXPECT_EQ(drop(x).to_vector<double>(), x.to_vector<double>());
  nn::Dropout none(0.0);
  EXPECT_EQ(none(x).to_vector<double>(), x.to_vector<double>());
  EXPECT_EQ(drop.extra_repr(), "p=0.5");
  expect_error([] { nn::Dropout bad(1.5); }, {"Dropout", "1.5"});
}

}  // namespace
}  // namespace anvil
