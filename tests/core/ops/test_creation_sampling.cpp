// tril/triu, linspace/logspace (core/ops/creation.h) and randperm,
// multinomial, bernoulli (core/ops/sampling.h): values as PyTorch's, the
// triangular gradients, reproducibility per seed, the sampling
// distributions within a few standard errors, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/ops.h"
#include "tests/core/gradcheck.h"
#include "tests/core/ops/op_test_util.h"

namespace anvil {
namespace {

using testing::gradcheck;

TEST(Creation, TrilAndTriuWithDiagonalOffsets) {
  const Tensor x = arange(1, 13, 1, kFloat32).view({3, 4});
  EXPECT_EQ(tril(x).to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}));
  EXPECT_EQ(x.triu(1).to_vector<float>(), (std::vector<float>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12}));
  EXPECT_EQ(tril(x, -1).to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  const Tensor batch = ones({2, 2, 2}, kInt64);
  EXPECT_EQ(triu(batch).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 0, 1, 1, 1, 0, 1}));
  EXPECT_EQ(triu(batch).dtype(), kInt64);
  manual_seed(1);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return tril(in[0], 1); }, {randn({3, 4}, kFloat64)}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return triu(in[0], -1); }, {randn({2, 3, 3}, kFloat64)}));
  EXPECT_ANVIL_ERROR(tril(zeros({3})), "tril: expected a tensor of at least 2 dims");
  EXPECT_ANVIL_ERROR(triu(zeros({3})), "triu: expected a tensor of at least 2 dims");
  EXPECT_ANVIL_ERROR(zeros({}).triu(), "(a matrix or a batch of them), got [] float32");
  EXPECT_ANVIL_ERROR(triu(Tensor()), "triu");
}

TEST(Creation, LinspaceAndLogspace) {
  const std::vector<float> l = linspace(-1.0, 1.0, 5).to_vector<float>();
  EXPECT_EQ(l, (std::vector<float>{-1.0f, -0.5f, 0.0f, 0.5f, 1.0f}));
  EXPECT_EQ(linspace(0, 1, 5).dtype(), kFloat32);
  const std::vector<double> d = linspace(0.0, 1.0, 7, kFloat64).to_vector<double>();
  EXPECT_EQ(d.front(), 0.0);
  EXPECT_EQ(d.back(), 1.0);  // exact at both ends
  EXPECT_NEAR(d[3], 0.5, 1e-15);
  EXPECT_EQ(linspace(2.0, 5.0, 1).to_vector<float>(), (std::vector<float>{2.0f}));
  EXPECT_EQ(linspace(2.0, 5.0, 0).numel(), 0);
  EXPECT_EQ(linspace(0.0, 10.0, 4, kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 10}));
  const std::vector<double> g = logspace(0.0, 3.0, 4, 10.0, kFloat64).to_vector<double>();
  EXPECT_EQ(g, (std::vector<double>{1.0, 10.0, 100.0, 1000.0}));
  EXPECT_NEAR(logspace(0.0, 2.0, 3, 2.0).to_vector<float>()[2], 4.0f, 1e-6);
  EXPECT_ANVIL_ERROR(linspace(0, 1, -1), "linspace: number of steps must be non-negative");
  EXPECT_ANVIL_ERROR(logspace(0, 1, -3), "logspace: number of steps must be non-negative, got -3");
}

TEST(Sampling, RandpermIsAPermutationReproduciblePerSeed) {
  manual_seed(42);
  const std::vector<int64_t> p = randperm(100).to_vector<int64_t>();
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(100);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(p, iota);
  manual_seed(42);
  EXPECT_EQ(randperm(100).to_vector<int64_t>(), p);
  EXPECT_EQ(randperm(0).numel(), 0);
  EXPECT_EQ(randperm(5, kFloat32).dtype(), kFloat32);
}

TEST(Sampling, RandpermRefusesWhatTheDtypeCannotHold) {
  EXPECT_ANVIL_ERROR(randperm(-1), "randperm: n must be non-negative, got -1");
  EXPECT_ANVIL_ERROR(randperm(3000, kFloat16), "randperm: n = 3000 is more than float16 holds exactly");
  EXPECT_ANVIL_ERROR(randperm(300, kBFloat16), "randperm: n = 300 is more than bfloat16");
  EXPECT_ANVIL_ERROR(randperm(257, kUInt8), "randperm: n = 257 is more than uint8");
  EXPECT_ANVIL_ERROR(randperm(3, kBool), "randperm: n = 3 is more than bool");
  EXPECT_ANVIL_ERROR(randperm((int64_t{1} << 24) + 1, kFloat32), "randperm: n = 16777217 is more than float32");
  // At the limit the values are still a permutation.
  manual_seed(5);
  std::vector<double> p = randperm(2048, kFloat16).to_vector<double>();
  std::sort(p.begin(), p.end());
  for (size_t i = 0; i < p.size(); ++i) ASSERT_EQ(p[i], static_cast<double>(i));
}

TEST(Sampling, MultinomialWithReplacementFollowsTheWeights) {
  manual_seed(7);
  const Tensor w = from_vector<double>({1.0, 0.0, 3.0, 4.0});  // unnormalised; one zero
  const int64_t n = 40000;
  const std::vector<int64_t> s = multinomial(w, n, true).to_vector<int64_t>();
  std::vector<double> count(4, 0.0);
  for (int64_t k : s) count[static_cast<size_t>(k)] += 1;
  EXPECT_EQ(count[1], 0.0);
  for (int k : {0, 2, 3}) {
    const double p = w.to_vector<double>()[k] / 8.0;
    EXPECT_NEAR(count[k] / n, p, 5 * std::sqrt(p * (1 - p) / n)) << "category " << k;
  }
  EXPECT_EQ(multinomial(w.view({1, 4}).expand({3, 4}).contiguous(), 5, true).shape(), (Shape{3, 5}));
}

TEST(Sampling, MultinomialWithoutReplacementNeverRepeats) {
  manual_seed(8);
  const Tensor w = from_vector<float>({0.1f, 5.0f, 0.0f, 1.0f, 2.0f, 0.5f}).view({2, 3});
  const Tensor s = multinomial(w, 2, false);
  EXPECT_EQ(s.dtype(), kInt64);
  const std::vector<int64_t> v = s.to_vector<int64_t>();
  EXPECT_NE(v[0], v[1]);
  EXPECT_NE(v[2], v[3]);
  EXPECT_TRUE(v[0] != 2 && v[1] != 2);  // the zero weight
  // The first draw follows the weights: category 1 of row 0 most of the time.
  int first_is_heaviest = 0;
  for (int t = 0; t < 400; ++t) first_is_heaviest += multinomial(w[0], 1, false).item<int64_t>() == 1;
  EXPECT_NEAR(first_is_heaviest / 400.0, 5.0 / 5.1, 0.03);
  EXPECT_ANVIL_ERROR(multinomial(w, 3, false), "multinomial: cannot draw 3 samples without replacement");
  EXPECT_ANVIL_ERROR(multinomial(from_vector<float>({1.0f, -1.0f}), 1),
                     "multinomial: probs must be finite and non-negative");
  EXPECT_ANVIL_ERROR(multinomial(zeros({2}), 1, true), "positive sum");
}

TEST(Sampling, BernoulliOfATensorOrAScalarP) {
  manual_seed(3);
  const Tensor p = from_vector<float>({0.0f, 1.0f, 0.25f}).view({3, 1}).expand({3, 20000}).contiguous();
  const Tensor b = bernoulli(p);
  EXPECT_EQ(b.dtype(), kFloat32);
  const std::vector<double> rows = mean(b, 1).to_vector<double>();
  EXPECT_EQ(rows[0], 0.0);
  EXPECT_EQ(rows[1], 1.0);
  EXPECT_NEAR(rows[2], 0.25, 5 * std::sqrt(0.25 * 0.75 / 20000));
  EXPECT_NEAR(mean(bernoulli(zeros({20000}, kFloat64), 0.7)).item<double>(), 0.7, 0.02);
  manual_seed(3);
  EXPECT_TRUE(all(eq(bernoulli(p), b)).item<bool>());  // reproducible per seed
  EXPECT_ANVIL_ERROR(bernoulli(zeros({2}), 1.5), "bernoulli: p must be in [0, 1]");
}

}  // namespace
}  // namespace anvil
