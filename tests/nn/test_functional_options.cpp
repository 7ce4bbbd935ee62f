// nn::functional's libtorch option forms (nn/functional_options.h) give the
// core ops' results, the modules built on them (Conv1d, ConvTranspose2d,
// GroupNorm, RMSNorm, the 1-D pools, AdaptiveMaxPool2d) have PyTorch's shapes,
// parameters and gradients, and Embedding's padding_idx row gets no gradient.
#include <gtest/gtest.h>

#include "nn/functional.h"
#include "nn/layers/layers.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

namespace F = nn::functional;
using testing::max_abs_diff;

TEST(NnFunctionalOptions, SameResultsAsTheCoreOps) {
  manual_seed(130);
  Tensor x = randn({2, 3, 5, 6});
  EXPECT_EQ(
      max_abs_diff(F::pad(x, F::PadFuncOptions({1, 2, 0, 1}).mode(kReflect)), pad(x, {1, 2, 0, 1}, PadMode::Reflect)),
      0);
  EXPECT_EQ(F::pad(x, F::PadFuncOptions({1, 1}).value(2.5)).to_vector<double>()[0], 2.5);
  Tensor up = F::interpolate(
      x, F::InterpolateFuncOptions().size(std::vector<int64_t>{10, 9}).mode(kBilinear).align_corners(true));
  InterpolateOptions io;
  io.size = {10, 9};
  io.mode = InterpolateMode::Bilinear;
  io.align_corners = true;
  EXPECT_EQ(max_abs_diff(up, interpolate(x, io)), 0);
  EXPECT_EQ(F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{2.0})).shape(),
            (Shape{2, 3, 10, 12}));
  Tensor w1 = randn({4, 3, 3}), b1 = randn({4});
  Tensor s = randn({2, 3, 8});
  EXPECT_EQ(max_abs_diff(F::conv1d(s, w1, F::Conv1dFuncOptions().bias(b1).stride(2).padding(1)),
                         conv1d(s, w1, b1, {2, 1, 1, 1})),
            0);
  Tensor wt = randn({3, 2, 3, 3});
  EXPECT_EQ(F::conv_transpose2d(x, wt, F::ConvTranspose2dFuncOptions().stride(2).padding(1).output_padding(1)).shape(),
            (Shape{2, 2, 10, 12}));
  EXPECT_EQ(F::max_pool1d(s, F::MaxPool1dFuncOptions(3).stride(2).ceil_mode(true)).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(F::avg_pool1d(s, F::AvgPool1dFuncOptions(3)).shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(F::adaptive_max_pool2d(x, F::AdaptiveMaxPool2dFuncOptions(nn::Size2{2, 4})).shape(), (Shape{2, 3, 2, 4}));
  Tensor gw = randn({3}), gb = randn({3});
  EXPECT_EQ(max_abs_diff(F::group_norm(x, F::GroupNormFuncOptions(3).weight(gw).bias(gb).eps(1e-3)),
                         group_norm(x, 3, gw, gb, 1e-3)),
            0);
  EXPECT_EQ(max_abs_diff(F::rms_norm(x, F::RMSNormFuncOptions({6}).eps(1e-5)), rms_norm(x, {6}, {}, 1e-5)), 0);
  EXPECT_EQ(max_abs_diff(F::instance_norm(x, F::InstanceNormFuncOptions().eps(1e-3)),
                         instance_norm(x, {}, {}, {}, {}, {true, 0.1, 1e-3})),
            0);
  Tensor lp = log_softmax(randn({4, 5}), 1), q = softmax(randn({4, 5}), 1);
  EXPECT_EQ(F::kl_div(lp, q, F::KLDivFuncOptions().reduction(kBatchMean)).item<double>(),
            kl_div(lp, q, KLDivReduction::BatchMean).item<double>());
  EXPECT_EQ(F::kl_div(lp, q, F::KLDivFuncOptions().reduction(kSum)).item<double>(),
            kl_div(lp, q, KLDivReduction::Sum).item<double>());
  EXPECT_EQ(F::smooth_l1_loss(lp, q, F::SmoothL1LossFuncOptions().beta(0.5).reduction(kSum)).item<double>(),
            smooth_l1_loss(lp, q, Reduction::Sum, 0.5).item<double>());
  EXPECT_EQ(F::huber_loss(lp, q, F::HuberLossFuncOptions().delta(0.3)).item<double>(),
            huber_loss(lp, q, Reduction::Mean, 0.3).item<double>());
  EXPECT_EQ(
      max_abs_diff(F::cosine_similarity(lp, q, F::CosineSimilarityFuncOptions().dim(0)), cosine_similarity(lp, q, 0)),
      0);
  EXPECT_EQ(F::pairwise_distance(lp, q, F::PairwiseDistanceFuncOptions().p(1).keepdim(true)).shape(), (Shape{4, 1}));
  EXPECT_EQ(F::one_hot(from_vector<int64_t>({1, 0}, {2}), 3).shape(), (Shape{2, 3}));
}

TEST(NnEmbeddingPaddingIdx, PaddingRowStartsAtZeroAndGetsNoGradient) {
  manual_seed(131);
  auto emb = std::make_shared<nn::Embedding>(nn::EmbeddingOptions(6, 3).padding_idx(-2));
  ASSERT_EQ(emb->padding_idx, std::optional<int64_t>(4));
  EXPECT_EQ(emb->weight[4].abs().sum().item<double>(), 0.0);
  EXPECT_GT(emb->weight[3].abs().sum().item<double>(), 0.0);
  Tensor idx = from_vector<int64_t>({4, 1, 4, 3, 1}, {5});
  Tensor out = emb->forward(idx);
  (out * randn(out.shape())).sum().backward();
  Tensor g = emb->weight.grad();
  EXPECT_EQ(g[4].abs().sum().item<double>(), 0.0) << "the padding row";
  EXPECT_GT(g[1].abs().sum().item<double>(), 0.0);
  EXPECT_GT(g[3].abs().sum().item<double>(), 0.0);
  EXPECT_EQ(g[0].abs().sum().item<double>(), 0.0) << "an unused row";
  // The functional form, libtorch's argument order; its values are the plain lookup's.
  Tensor w = randn({5, 2}).requires_grad_(true);
  Tensor y = F::embedding(idx, w, F::EmbeddingFuncOptions().padding_idx(1));
  EXPECT_EQ(max_abs_diff(y, embedding(w, idx)), 0);
  y.sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>()[2], 0.0);  // row 1
  EXPECT_EQ(w.grad().to_vector<double>()[8], 2.0);  // row 4, read twice
  testing::expect_error([&] { nn::Embedding(nn::EmbeddingOptions(3, 2).padding_idx(3)); },
                        {"Embedding", "padding_idx 3"});
  testing::expect_error([&] { embedding(w, idx, 7); }, {"embedding", "padding_idx 7"});
}

// The weight's gradient against central differences of sum(upstream * out),
// in float64, for every row but padding_idx (whose gradient is 0 by
// definition, although the output reads it), with indices that repeat rows.
TEST(NnEmbeddingPaddingIdx, GradientMatchesFiniteDifferencesOffThePaddingRow) {
  manual_seed(133);
  const int64_t rows = 5, dim = 3, padding_idx = 2;
  Tensor w = randn({rows, dim}, kFloat64);
  const Tensor idx = randint(0, rows, {4, 3}).to(kInt64);
  const Tensor with_pad = cat({idx.view({-1}), from_vector<int64_t>({padding_idx, padding_idx}, {2})}).view({2, 7});
  const Tensor upstream = randn({2, 7, dim}, kFloat64);
  auto loss = [&](const Tensor& weight) { return (embedding(weight, with_pad, padding_idx) * upstream).sum(); };
  Tensor leaf = w.clone().requires_grad_(true);
  loss(leaf).backward();
  const std::vector<double> analytic = leaf.grad().to_vector<double>();
  const double eps = 1e-6;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < dim; ++c) {
      const size_t k = static_cast<size_t>(r * dim + c);
      if (r == padding_idx) {
        EXPECT_EQ(analytic[k], 0.0) << "padding row, column " << c;
        continue;
      }
      Tensor plus = w.clone(), minus = w.clone();
      plus[r][c].add_(eps);
      minus[r][c].add_(-eps);
      const double numeric = (loss(plus).item<double>() - loss(minus).item<double>()) / (2 * eps);
      EXPECT_NEAR(analytic[k], numeric, 1e-7) << "row " << r << ", column " << c;
    }
  }
  // The upstream gradient at the padding positions is non-zero, so a zero
  // there is the padding rule, not an accident of the data.
  EXPECT_GT(upstream[1].slice(0, 5, 7).abs().sum().item<double>(), 0.0);
}

TEST(NnLayersMore, ShapesParametersAndGradcheck) {
  manual_seed(132);
  auto conv = std::make_shared<nn::Conv1d>(nn::Conv1dOptions(4, 6, 3).padding(1).groups(2));
  EXPECT_EQ(conv->weight.shape(), (Shape{6, 2, 3}));
  EXPECT_EQ(conv->forward(randn({2, 4, 7})).shape(), (Shape{2, 6, 7}));
  auto up = std::make_shared<nn::ConvTranspose2d>(nn::ConvTranspose2dOptions(4, 2, 4).stride(2).padding(1));
  EXPECT_EQ(up->weight.shape(), (Shape{4, 2, 4, 4}));
  EXPECT_EQ(up->forward(randn({1, 4, 5, 6})).shape(), (Shape{1, 2, 10, 12}));
  auto gn = std::make_shared<nn::GroupNorm>(2, 4);
  EXPECT_EQ(gn->parameters().size(), 2u);
  EXPECT_EQ(gn->weight.to_vector<double>(), (std::vector<double>(4, 1.0)));
  auto rms = std::make_shared<nn::RMSNorm>(nn::RMSNormOptions({5}).eps(1e-6));
  EXPECT_EQ(rms->weight.shape(), (Shape{5}));
  EXPECT_EQ(std::make_shared<nn::MaxPool1d>(nn::MaxPool1dOptions(2))->forward(randn({1, 2, 7})).shape(),
            (Shape{1, 2, 3}));
  EXPECT_EQ(std::make_shared<nn::AvgPool1d>(3)->forward(randn({2, 9})).shape(), (Shape{2, 3}));
  EXPECT_EQ(std::make_shared<nn::AdaptiveMaxPool2d>(nn::Size2{3, 2})->forward(randn({1, 2, 7, 5})).shape(),
            (Shape{1, 2, 3, 2}));
  for (nn::Module* m : std::vector<nn::Module*>{conv.get(), up.get(), gn.get(), rms.get()}) m->to(kFloat64);
  EXPECT_TRUE(testing::module_gradcheck(*conv, randn({1, 4, 5}, kFloat64)));
  EXPECT_TRUE(testing::module_gradcheck(*up, randn({1, 4, 2, 3}, kFloat64)));
  EXPECT_TRUE(testing::module_gradcheck(*gn, randn({2, 4, 3}, kFloat64)));
  EXPECT_TRUE(testing::module_gradcheck(*rms, randn({3, 5}, kFloat64)));
  nn::MaxPool2d ceil_pool(nn::MaxPool2dOptions(3).stride(nn::Size2(2)).ceil_mode(true));
  EXPECT_EQ(ceil_pool.forward(randn({1, 1, 6, 6})).shape(), (Shape{1, 1, 3, 3}));
  nn::AvgPool2d ceil_avg(nn::AvgPool2dOptions(3).stride(nn::Size2(2)).ceil_mode(true));
  EXPECT_EQ(ceil_avg.forward(randn({1, 1, 6, 6})).shape(), (Shape{1, 1, 3, 3}));
  testing::expect_error([] { nn::GroupNorm(3, 4); }, {"GroupNorm", "num_groups (3)", "num_channels (4)"});
}

}  // namespace
}  // namespace anvil
