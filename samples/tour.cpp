// A tour of anvil: tensors, views, broadcasting, matmul, autograd and a small
// training loop. README.md quotes this file and the readme_tour test runs it.
#include <anvil/anvil.h>

#include <cstdio>
#include <iostream>

using namespace anvil;

static int failures = 0;
static void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "[ok]  " : "[FAIL]", what);
  failures += ok ? 0 : 1;
}
static float max_abs_diff(const Tensor& a, const Tensor& b) { return (a - b).abs().max().item<float>(); }

int main() {
  manual_seed(0);

  // Tensors: factories take a shape and options (dtype, device, requires_grad).
  Tensor a = arange(6, kFloat32).view({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  std::cout << "a = " << a << "\n";
  check(a.shape() == Shape{2, 3} && a.dtype() == kFloat32, "arange(6, kFloat32).view({2, 3}) is a float32 [2, 3]");

  // Views share storage with their base: a write through one shows in the other.
  Tensor at = a.t();
  check(at.shape() == Shape{3, 2} && !at.is_contiguous(), "t() is a strided view, no copy");
  at[2][1].fill_(50);
  check(a[1][2].item<float>() == 50, "a write through the view reaches a");

  // Elementwise ops broadcast like NumPy: [2, 3] + [2, 1] -> [2, 3].
  Tensor b = a + tensor({10, 20}).view({2, 1});
  check(b[1][0].item<float>() == 23, "a + column broadcasts along the rows");

  // matmul: multiplying by ones sums each row.
  Tensor m = matmul(a, ones({3, 4}));
  check(m.shape() == Shape{2, 4} && m[1][3].item<float>() == 3 + 4 + 50, "matmul(a, ones) sums rows");

  // Autograd: mark a leaf, compute, call backward(); d/dx sum(x * x) = 2x.
  Tensor x = randn({5}, TensorOptions().requires_grad());
  Tensor y = (x * x).sum();
  y.backward();
  check(max_abs_diff(x.grad(), x.detach() * 2) < 1e-6f, "the gradient of sum(x * x) is 2x");
  {
    NoGradGuard no_grad;  // evaluation and parameter updates record no history
    check(!(x * 3).requires_grad(), "under NoGradGuard results do not require grad");
  }

  // Logistic regression on points labelled by a known line; the loss must fall.
  Tensor points = randn({256, 2});
  Tensor labels = gt(matmul(points, tensor({2, -3}).view({2, 1})) + 0.5, 0).to(kFloat32);
  Tensor w = zeros({2, 1}, TensorOptions().requires_grad());
  Tensor bias = zeros({1}, TensorOptions().requires_grad());
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 50; ++step) {
    Tensor loss = binary_cross_entropy_with_logits(matmul(points, w) + bias, labels);
    loss.backward();
    {
      NoGradGuard no_grad;
      w.sub_(w.grad() * 0.5);
      bias.sub_(bias.grad() * 0.5);
      w.grad().zero_();
      bias.grad().zero_();
    }
    last_loss = loss.item<float>();
    if (step == 0) first_loss = last_loss;
    if (step % 10 == 0 || step == 49) std::printf("step %2d  loss %.4f\n", step, last_loss);
  }
  check(last_loss < 0.5f * first_loss, "logistic regression: the loss at least halved in 50 steps");
  Tensor predicted = gt(matmul(points, w) + bias, 0).to(kFloat32);
  check(eq(predicted, labels).to(kFloat32).mean().item<float>() > 0.9f, "and it classifies over 90% right");

  std::printf(failures == 0 ? "tour: all checks passed\n" : "tour: %d check(s) failed\n", failures);
  return failures == 0 ? 0 : 1;
}
