// A tiny end-to-end training run with core ops only: softmax regression on
// generated, linearly separable data must drive the loss below a bound.
#include <gtest/gtest.h>

#include <cmath>

#include "core/ops.h"

namespace anvil {
namespace {

TEST(Training, SoftmaxRegressionLossFalls) {
  manual_seed(3);
  const int64_t n = 512, features = 8, classes = 3;
  Tensor true_w = randn({features, classes}) * 3.0;
  Tensor x = randn({n, features});
  Tensor y = argmax(matmul(x, true_w), 1);  // labels a linear model can fit

  Tensor w = zeros({features, classes}).requires_grad_();
  Tensor b = zeros({classes}).requires_grad_();
  double first_loss = 0, last_loss = 0;
  for (int step = 0; step < 200; ++step) {
    Tensor loss = cross_entropy(matmul(x, w) + b, y);
    w.set_grad({});
    b.set_grad({});
    loss.backward();
    {
      NoGradGuard no_grad;
      w.sub_(w.grad() * 0.5);
      b.sub_(b.grad() * 0.5);
    }
    (step == 0 ? first_loss : last_loss) = loss.item<double>();
  }
  EXPECT_NEAR(first_loss, std::log(3.0), 1e-5);  // uniform prediction at the start
  EXPECT_LT(last_loss, 0.15);
  double acc = eq(argmax(matmul(x, w) + b, 1), y).to(kFloat32).mean().item<double>();
  EXPECT_GT(acc, 0.95);
}

}  // namespace
}  // namespace anvil
