// nn::GLU and F::glu (CONTRIBUTING.md's worked example of adding a module):
// the output against a * sigmoid(b) computed in a naive loop over the two
// halves, along the last, a middle and the first dim; the options' spellings
// and the printed form; gradients against finite differences; bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "nn/functional.h"
#include "nn/layers/activation.h"
#include "nn/layers/container.h"
#include "nn/layers/linear.h"
#include "tests/nn/layers/layer_test_util.h"

namespace anvil {
namespace {

namespace F = nn::functional;
using testing::expect_error;
using testing::expect_near_vec;
using testing::module_gradcheck;

// glu of a contiguous x along dim in plain doubles: out[.., j, ..] = x[.., j, ..] * sigmoid(x[.., j + half, ..]).
std::vector<double> reference_glu(const Tensor& x, int64_t dim) {
  const std::vector<double> v = x.contiguous().to_vector<double>();
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s[i];
  for (int64_t i = dim + 1; i < x.dim(); ++i) inner *= s[i];
  const int64_t half = s[dim] / 2;
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < half; ++j)
      for (int64_t k = 0; k < inner; ++k) {
        const double a = v[static_cast<size_t>((o * s[dim] + j) * inner + k)];
        const double b = v[static_cast<size_t>((o * s[dim] + j + half) * inner + k)];
        out.push_back(a / (1.0 + std::exp(-b)));
      }
  return out;
}

TEST(NnGLU, MatchesTheFormulaAlongAnyDim) {
  manual_seed(71);
  const Tensor x2 = randn({3, 8}, kFloat64) * 3.0;
  nn::GLU last;
  const Tensor y = last(x2);
  EXPECT_EQ(y.shape(), (Shape{3, 4}));
  expect_near_vec(y.to_vector<double>(), reference_glu(x2, 1), 1e-12, "dim -1");

  const Tensor x3 = randn({4, 6, 5}, kFloat64);
  nn::GLU middle(1);
  EXPECT_EQ(middle(x3).shape(), (Shape{4, 3, 5}));
  expect_near_vec(middle(x3).to_vector<double>(), reference_glu(x3, 1), 1e-12, "dim 1");
  nn::GLU first(nn::GLUOptions().dim(0));
  EXPECT_EQ(first(x3).shape(), (Shape{2, 6, 5}));
  expect_near_vec(first(x3).to_vector<double>(), reference_glu(x3, 0), 1e-12, "dim 0");
  nn::GLU negative(nn::GLUOptions(-2));  // dim -2 of [4, 6, 5] is dim 1
  expect_near_vec(negative(x3).to_vector<double>(), reference_glu(x3, 1), 1e-12, "dim -2");

  // The functional forms, as libtorch spells them, give the module's result.
  expect_near_vec(F::glu(x3, F::GLUFuncOptions(1)).to_vector<double>(), reference_glu(x3, 1), 1e-12, "F::glu options");
  expect_near_vec(F::glu(x2).to_vector<double>(), reference_glu(x2, 1), 1e-12, "F::glu default");

  // float32 keeps its dtype; a strided input is read through its strides.
  const Tensor xt = randn({8, 3}).t();  // [3, 8], not contiguous
  const Tensor yt = F::glu(xt);
  EXPECT_EQ(yt.dtype(), kFloat32);
  expect_near_vec(yt.to_vector<double>(), reference_glu(xt, 1), 1e-6, "strided float32");
}

TEST(NnGLU, PrintsAsPyTorchAndHasNoParameters) {
  EXPECT_EQ(nn::GLU().extra_repr(), "dim=-1");
  EXPECT_EQ(nn::GLU(2).repr(), "GLU(dim=2)");
  EXPECT_TRUE(nn::GLU().parameters().empty());
  nn::GLUOptions o{.dim = 3};
  EXPECT_EQ(nn::GLU(o).options.dim(), 3);
}

TEST(NnGLU, GradientsMatchFiniteDifferences) {
  manual_seed(72);
  nn::GLU glu(1);
  EXPECT_TRUE(module_gradcheck(glu, randn({2, 6, 3}, kFloat64)));
  // In a model: Linear(4, 10) then GLU halves the features to 5; the
  // gradient reaches the Linear's weight and bias through both halves.
  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(4, 10), std::make_shared<nn::GLU>());
  model->to(kFloat64);
  const Tensor x = randn({3, 4}, kFloat64);
  EXPECT_EQ(model->forward(x).shape(), (Shape{3, 5}));
  EXPECT_TRUE(module_gradcheck(*model, x));
}

TEST(NnGLU, RefusesAnOddDimAScalarAndADimOutOfRange) {
  nn::GLU glu;
  expect_error([&] { glu(zeros({2, 5})); }, {"glu: halving dimension must be even", "dimension 1 is size 5", "[2, 5]"});
  expect_error([&] { F::glu(zeros({3, 4}), 0); }, {"glu:", "dimension 0 is size 3"});
  expect_error([&] { glu(scalar_tensor(1.0)); }, {"glu: expected a tensor with at least one dim", "0-d"});
  expect_error([&] { nn::GLU(2)(zeros({4, 4})); }, {"glu: dim 2 is out of range"});
  expect_error([&] { F::glu(Tensor()); }, {"glu:", "undefined"});
}

}  // namespace
}  // namespace anvil
