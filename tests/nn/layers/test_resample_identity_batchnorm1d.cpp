// Identity, Upsample, PixelShuffle / PixelUnshuffle and BatchNorm1d against
// index arithmetic and host statistics; gradients; bad input. Also
// Module::forward_inputs' defaults.
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops.h"
#include "nn/layers/batchnorm.h"
#include "nn/layers/container.h"
#include "nn/layers/linear.h"
#include "nn/layers/upsample.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

using testing::expect_error;

TEST(Identity, ReturnsItsInput) {
  nn::Identity id;
  Tensor x = randn({2, 3});
  EXPECT_EQ(id.forward(x).data_ptr(), x.data_ptr());
  EXPECT_EQ(id.parameters().size(), 0u);
}

TEST(PixelShuffle, MatchesIndexFormulaAndUnshuffleInvertsIt) {
  const int64_t n = 2, c = 3, r = 2, h = 3, w = 4;
  Tensor x = randn({n, c * r * r, h, w}, kFloat64);
  nn::PixelShuffle ps(r);
  Tensor y = ps.forward(x);
  ASSERT_EQ(y.shape(), (Shape{n, c, h * r, w * r}));
  auto xv = x.to_vector<double>(), yv = y.to_vector<double>();
  // out[b, ch, i * r + a, j * r + bb] = in[b, ch * r * r + a * r + bb, i, j], PyTorch's definition.
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t oy = 0; oy < h * r; ++oy)
        for (int64_t ox = 0; ox < w * r; ++ox) {
          const int64_t in_c = ch * r * r + (oy % r) * r + (ox % r);
          const double want = xv[((b * c * r * r + in_c) * h + oy / r) * w + ox / r];
          ASSERT_EQ(yv[((b * c + ch) * h * r + oy) * w * r + ox], want);
        }
  nn::PixelUnshuffle pu(r);
  EXPECT_EQ((pu.forward(y) - x).abs().max().item<double>(), 0.0);
  // Extra leading dims and gradients.
  EXPECT_EQ(ps.forward(randn({2, 2, 8, 3, 3})).shape(), (Shape{2, 2, 2, 6, 6}));
  EXPECT_TRUE(testing::module_gradcheck(ps, randn({1, 8, 2, 2}, kFloat64)));
  EXPECT_TRUE(testing::module_gradcheck(pu, randn({1, 2, 4, 6}, kFloat64)));
  expect_error([&] { ps.forward(randn({1, 6, 2, 2})); }, {"PixelShuffle", "C * 4", "[1, 6, 2, 2]"});
  expect_error([&] { pu.forward(randn({1, 2, 3, 4})); }, {"PixelUnshuffle", "divisible by 2", "[1, 2, 3, 4]"});
  expect_error([] { nn::PixelShuffle(0); }, {"PixelShuffle", "upscale_factor"});
}

TEST(Upsample, NearestAndBilinearAreInterpolate) {
  Tensor x = randn({1, 2, 3, 4}, kFloat64);
  nn::Upsample near(nn::UpsampleOptions().scale_factor({2.0}));
  Tensor y = near.forward(x);
  ASSERT_EQ(y.shape(), (Shape{1, 2, 6, 8}));
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 8; ++j) ASSERT_EQ(y[0][1][i][j].item<double>(), x[0][1][i / 2][j / 2].item<double>());
  nn::Upsample bil(nn::UpsampleOptions().size({5, 7}).mode(kBilinear).align_corners(true));
  Tensor z = bil.forward(x);
  ASSERT_EQ(z.shape(), (Shape{1, 2, 5, 7}));
  // align_corners: the corners are kept, the centre of a 3 -> 5 row is the average of neighbours.
  EXPECT_NEAR(z[0][0][0][0].item<double>(), x[0][0][0][0].item<double>(), 1e-12);
  EXPECT_NEAR(z[0][0][4][6].item<double>(), x[0][0][2][3].item<double>(), 1e-12);
  EXPECT_NEAR(z[0][0][1][0].item<double>(), 0.5 * (x[0][0][0][0].item<double>() + x[0][0][1][0].item<double>()), 1e-12);
  EXPECT_EQ(bil.extra_repr(), "size=(5, 7), mode='bilinear'");
  EXPECT_TRUE(testing::module_gradcheck(bil, randn({1, 1, 3, 2}, kFloat64)));
  expect_error([] { nn::Upsample(nn::UpsampleOptions()); }, {"Upsample", "exactly one of size and scale_factor"});
  expect_error([&] { near.forward(randn({3, 4})); }, {"Upsample", "[N, C, *spatial]", "[3, 4]"});
}

TEST(BatchNorm1d, NormalisesFeaturesAndSequencesPerChannel) {
  manual_seed(1);
  for (bool sequence : {false, true}) {
    SCOPED_TRACE(sequence ? "[N, C, L]" : "[N, C]");
    nn::BatchNorm1d bn(3);
    bn.to(kFloat64);
    Tensor x = sequence ? randn({4, 3, 5}, kFloat64) * 2 + 1 : randn({6, 3}, kFloat64) * 2 + 1;
    Tensor y = bn.forward(x);
    for (int64_t ch = 0; ch < 3; ++ch) {
      Tensor xc = x.select(1, ch).flatten(), yc = y.select(1, ch).flatten();
      auto v = xc.to_vector<double>();
      double mean = 0, var = 0;
      for (double a : v) mean += a;
      mean /= double(v.size());
      for (double a : v) var += (a - mean) * (a - mean);
      auto yv = yc.to_vector<double>();
      for (size_t i = 0; i < v.size(); ++i)
        ASSERT_NEAR(yv[i], (v[i] - mean) / std::sqrt(var / double(v.size()) + 1e-5), 1e-10);
      // Running statistics: momentum 0.1 of the unbiased variance.
      EXPECT_NEAR(bn.running_mean[ch].item<double>(), 0.1 * mean, 1e-12);
      EXPECT_NEAR(bn.running_var[ch].item<double>(), 0.9 + 0.1 * var / double(v.size() - 1), 1e-12);
    }
    bn.eval();
    Tensor e = bn.forward(x);
    EXPECT_NEAR(e.select(1, 0).flatten()[0].item<double>(),
                (x.select(1, 0).flatten()[0].item<double>() - bn.running_mean[0].item<double>()) /
                    std::sqrt(bn.running_var[0].item<double>() + 1e-5),
                1e-12);
  }
  nn::BatchNorm1d bn(3);
  bn.to(kFloat64);
  bn.eval();
  EXPECT_TRUE(testing::module_gradcheck(bn, randn({4, 3, 2}, kFloat64)));
  bn.train();
  EXPECT_TRUE(testing::module_gradcheck(bn, randn({4, 3}, kFloat64)));
  EXPECT_EQ(testing::names_of(bn.named_buffers()),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  expect_error([&] { bn.forward(randn({4, 2}, kFloat64)); }, {"BatchNorm1d", "[N, 3] or [N, 3, L]", "[4, 2]"});
  expect_error([&] { bn.forward(randn({4, 3, 2, 2}, kFloat64)); }, {"BatchNorm1d", "[4, 3, 2, 2]"});
  expect_error([&] { bn.forward(randn({1, 3}, kFloat64)); }, {"BatchNorm1d", "more than one value per channel"});
  expect_error([] { nn::BatchNorm1d(0); }, {"BatchNorm1d", "num_features"});
}

// A module with two inputs, written only as forward_inputs.
struct AddTwo : nn::Module {
  AddTwo() : Module("AddTwo") {}
  Tensor forward_inputs(const std::vector<Tensor>& in) override {
    ANVIL_CHECK(in.size() == 2, "AddTwo: two inputs");
    return in[0] + in[1];
  }
};
struct NoForward : nn::Module {
  NoForward() : Module("NoForward") {}
};

TEST(ModuleForwardInputs, DefaultsCallEachOtherAndSequentialPassesInputsToItsFirst) {
  auto lin = std::make_shared<nn::Linear>(3, 2);
  Tensor x = randn({4, 3}), y = randn({4, 3});
  EXPECT_EQ((lin->forward_inputs({x}) - lin->forward(x)).abs().max().item<double>(), 0.0);
  expect_error([&] { lin->forward_inputs({x, y}); }, {"Linear", "one tensor", "2 inputs"});
  auto seq = std::make_shared<nn::Sequential>(std::make_shared<AddTwo>(), lin);
  EXPECT_EQ(((*seq)(x, y) - lin->forward(x + y)).abs().max().item<double>(), 0.0);
  NoForward nf;
  expect_error([&] { nf.forward(x); }, {"NoForward", "no forward"});
  expect_error([&] { nf.forward_inputs({x}); }, {"NoForward", "no forward"});
}

}  // namespace
}  // namespace anvil
