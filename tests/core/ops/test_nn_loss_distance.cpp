// one_hot and the kl_div, smooth_l1, huber, cosine-similarity and
// pairwise-distance ops (core/ops/nn/loss_distance.cpp) against loops over
// host values, their gradients against finite differences, and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/core/ops/nn_test_util.h"
#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;
using testing::expect_near_vec;
using testing::gradcheck;
using testing::randn64;
using testing::uniform64;

TEST(NnOneHot, ValuesAndErrors) {
  Tensor idx = from_vector<int64_t>({2, 0, 1, 2}, {2, 2});
  Tensor h = one_hot(idx);
  EXPECT_EQ(h.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(h.dtype(), kInt64);
  EXPECT_EQ(h.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(one_hot(idx, 5).shape(), (Shape{2, 2, 5}));
  expect_error([&] { one_hot(idx, 2); }, {"one_hot", "class index 2", "num_classes=2"});
  expect_error([&] { one_hot(from_vector<int64_t>({-1, 0}, {2})); }, {"one_hot", "non-negative"});
  expect_error([&] { one_hot(randn64({2})); }, {"one_hot", "int64"});
}

TEST(NnKLDiv, ReductionsAndLogTarget) {
  manual_seed(24);
  Tensor input = log_softmax(randn64({3, 4}), 1), target = softmax(randn64({3, 4}), 1);
  target.narrow(1, 0, 1).zero_();  // xlogy: a zero target contributes 0
  const auto iv = input.to_vector<double>(), tv = target.to_vector<double>();
  std::vector<double> want(iv.size());
  double total = 0;
  for (size_t i = 0; i < iv.size(); ++i) {
    want[i] = tv[i] > 0 ? tv[i] * (std::log(tv[i]) - iv[i]) : 0.0;
    total += want[i];
  }
  expect_near_vec(kl_div(input, target, KLDivReduction::None).to_vector<double>(), want, 1e-12);
  EXPECT_NEAR(kl_div(input, target, KLDivReduction::Sum).item<double>(), total, 1e-12);
  EXPECT_NEAR(kl_div(input, target).item<double>(), total / 12, 1e-12);
  EXPECT_NEAR(kl_div(input, target, KLDivReduction::BatchMean).item<double>(), total / 3, 1e-12);
  Tensor log_t = log_softmax(randn64({3, 4}), 1);
  const auto lv = log_t.to_vector<double>();
  double lt_total = 0;
  for (size_t i = 0; i < iv.size(); ++i) lt_total += std::exp(lv[i]) * (lv[i] - iv[i]);
  EXPECT_NEAR(kl_div(input, log_t, KLDivReduction::Sum, true).item<double>(), lt_total, 1e-12);
  for (bool log_target : {false, true}) {
    Tensor t0 = log_target ? randn64({2, 3}) : uniform64({2, 3}, 0.1, 1.0);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& t) { return kl_div(t[0], t[1], KLDivReduction::BatchMean, log_target); },
        {randn64({2, 3}), t0}))
        << "log_target " << log_target;
  }
  expect_error([&] { kl_div(input, randn64({4, 3})); }, {"kl_div", "same shape", "[3, 4]", "[4, 3]"});
}

TEST(NnSmoothL1Huber, MatchLoops) {
  manual_seed(25);
  Tensor a = randn64({4, 5}) * 2.0, b = randn64({4, 5});
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (double beta : {0.0, 0.5, 1.0, 2.0}) {
    double sl1 = 0, hub = 0;
    for (size_t i = 0; i < av.size(); ++i) {
      const double z = std::abs(av[i] - bv[i]);
      sl1 += beta == 0 ? z : (z < beta ? 0.5 * z * z / beta : z - 0.5 * beta);
      if (beta > 0) hub += z < beta ? 0.5 * z * z : beta * (z - 0.5 * beta);
    }
    EXPECT_NEAR(smooth_l1_loss(a, b, Reduction::Sum, beta).item<double>(), sl1, 1e-10) << beta;
    EXPECT_NEAR(smooth_l1_loss(a, b, Reduction::Mean, beta).item<double>(), sl1 / 20, 1e-10) << beta;
    if (beta > 0) {
      EXPECT_NEAR(huber_loss(a, b, Reduction::Sum, beta).item<double>(), hub, 1e-10) << beta;
    }
  }
  EXPECT_EQ(huber_loss(a, b, Reduction::None).shape(), (Shape{4, 5}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return smooth_l1_loss(t[0], t[1], Reduction::None, 0.7); },
                        {randn64({3, 4}), randn64({3, 4})}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return huber_loss(t[0], t[1], Reduction::Mean, 0.7); },
                        {randn64({3, 4}), randn64({3, 4})}));
  expect_error([&] { smooth_l1_loss(a, b, Reduction::Mean, -1.0); }, {"smooth_l1_loss", "beta"});
  expect_error([&] { huber_loss(a, b, Reduction::Mean, 0.0); }, {"huber_loss", "delta"});
  expect_error([&] { huber_loss(a, b.t()); }, {"huber_loss", "same shape"});
}

TEST(NnDistances, CosineSimilarityAndPairwiseDistance) {
  manual_seed(26);
  Tensor a = randn64({3, 4}), b = randn64({1, 4});
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> cos(3), dist(3), dist1(3);
  for (size_t r = 0; r < 3; ++r) {
    double dotp = 0, na = 0, nb = 0, d2 = 0, d1 = 0;
    for (size_t i = 0; i < 4; ++i) {
      dotp += av[r * 4 + i] * bv[i];
      na += av[r * 4 + i] * av[r * 4 + i];
      nb += bv[i] * bv[i];
      const double diff = av[r * 4 + i] - bv[i] + 1e-6;
      d2 += diff * diff;
      d1 += std::abs(diff);
    }
    cos[r] = dotp / (std::sqrt(na) * std::sqrt(nb));
    dist[r] = std::sqrt(d2);
    dist1[r] = d1;
  }
  expect_near_vec(cosine_similarity(a, b).to_vector<double>(), cos, 1e-12);  // b broadcasts
  expect_near_vec(cosine_similarity(a.t(), b.t(), 0).to_vector<double>(), cos, 1e-12);
  expect_near_vec(pairwise_distance(a, b).to_vector<double>(), dist, 1e-12);
  expect_near_vec(pairwise_distance(a, b, 1.0).to_vector<double>(), dist1, 1e-12);
  EXPECT_EQ(pairwise_distance(a, b, 2.0, 1e-6, true).shape(), (Shape{3, 1}));
  // A zero vector: the norm is clamped to eps, the similarity is 0, not NaN.
  EXPECT_EQ(cosine_similarity(zeros({1, 4}, kFloat64), b).item<double>(), 0.0);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return cosine_similarity(t[0], t[1], 1); },
                        {randn64({2, 3}), randn64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& t) { return pairwise_distance(t[0], t[1], 3.0); },
                        {randn64({2, 3}), randn64({2, 3})}));
  expect_error([&] { cosine_similarity(a, b, 2); }, {"cosine_similarity", "dim 2"});
  expect_error([&] { cosine_similarity(a, randn64({3})); }, {"cosine_similarity"});
  expect_error([&] { pairwise_distance(a, b, -1.0); }, {"pairwise_distance", "p >= 0"});
}

}  // namespace
}  // namespace anvil
