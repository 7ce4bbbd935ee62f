// Built against an installed anvil: includes, links and runs a matmul with
// its backward pass. Exits non-zero on a wrong value.
#include <anvil/anvil.h>

#include <cmath>
#include <cstdio>

int main() {
  auto a = anvil::tensor({1, 2, 3, 4}).view({2, 2}).detach().requires_grad_();
  auto b = anvil::tensor({5, 6, 7, 8}).view({2, 2});
  auto c = anvil::matmul(a, b);
  c.sum().backward();

  // c[0][0] = 1*5 + 2*7; d(sum c)/da[i][k] = sum_j b[k][j] = {11, 15} per row.
  const float c00 = c[0][0].item<float>();
  const auto grad = a.grad().to_vector<float>();
  const float expected_grad[] = {11, 15, 11, 15};
  bool ok = std::fabs(c00 - 19.0f) < 1e-5f;
  for (int i = 0; i < 4; ++i) ok = ok && std::fabs(grad[i] - expected_grad[i]) < 1e-5f;
  std::printf("consumer: c[0][0] = %g, a.grad = [%g, %g, %g, %g]: %s\n", c00, grad[0], grad[1], grad[2],
              grad[3], ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
