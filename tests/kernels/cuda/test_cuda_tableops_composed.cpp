// The ops written with others (no kernel of their own) on the CUDA device,
// against the CPU: all/any/logsumexp, tril/triu, linspace/logspace, the
// samplers (randperm, multinomial, bernoulli: the same numbers per seed on
// both devices, since rand is Philox everywhere), and the gradients of the
// new elementwise rows (fmod, remainder, the parametrised activations) run on
// the device. The rows' forward kernels are in the CUDA op-table sweep
// (test_cuda_every_elementwise_op.cpp).
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "core/ops.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using test::all_close;

TEST(CudaTableopsComposed, LogicalReductionsAndLogsumexp) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor x = round(test::random_tensor({6, 9}, kFloat32, 1));  // zeros in places
  const Tensor xd = x.cuda();
  for (int64_t dim : {0, 1}) {
    EXPECT_EQ(all(xd, dim).to_vector<int64_t>(), all(x, dim).to_vector<int64_t>());
    EXPECT_EQ(any(xd, dim, true).to_vector<int64_t>(), any(x, dim, true).to_vector<int64_t>());
    EXPECT_TRUE(all_close(logsumexp(xd, dim), logsumexp(x, dim), {1e-5, 1e-6}));
  }
  EXPECT_EQ(all(xd).item<bool>(), all(x).item<bool>());
  EXPECT_EQ(any(zeros({0}, Device::cuda(0))).item<bool>(), false);
}

TEST(CudaTableopsComposed, TriangularPartsAndSpacedValues) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor x = test::random_tensor({2, 5, 4}, kFloat64, 2);
  for (int64_t d : {-2, 0, 1}) {
    EXPECT_EQ(tril(x.cuda(), d).to_vector<double>(), tril(x, d).to_vector<double>());
    EXPECT_EQ(triu(x.cuda(), d).to_vector<double>(), triu(x, d).to_vector<double>());
  }
  const TensorOptions on_gpu = TensorOptions(kFloat64).device(Device::cuda(0));
  EXPECT_EQ(linspace(-2.0, 3.0, 11, on_gpu).to_vector<double>(), linspace(-2.0, 3.0, 11, kFloat64).to_vector<double>());
  EXPECT_TRUE(all_close(logspace(-1.0, 2.0, 7, 3.0, on_gpu), logspace(-1.0, 2.0, 7, 3.0, kFloat64), {1e-12, 0}));
  // tril's gradient on the device.
  Tensor leaf = x.cuda().requires_grad_(true);
  tril(leaf, 1).sum().backward();
  EXPECT_EQ(leaf.grad().to_vector<double>(), tril(ones({2, 5, 4}, kFloat64), 1).to_vector<double>());
}

TEST(CudaTableopsComposed, SamplersGiveTheCpusNumbersPerSeed) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Device gpu = Device::cuda(0);
  auto both = [&](const std::function<Tensor(Device)>& f) {
    manual_seed(77);
    const Tensor on_cpu = f(Device::cpu());
    manual_seed(77);
    const Tensor on_gpu = f(gpu);
    EXPECT_EQ(on_gpu.device(), gpu);
    return std::pair{on_cpu.to_vector<double>(), on_gpu.to_vector<double>()};
  };
  auto [p_cpu, p_gpu] = both([](Device d) { return randperm(50, TensorOptions(kInt64).device(d)); });
  EXPECT_EQ(p_gpu, p_cpu);
  const Tensor w = test::random_uniform_tensor({3, 8}, kFloat32, 0.0, 1.0, 4);
  auto [m_cpu, m_gpu] = both([&](Device d) { return multinomial(w.to(d), 20, true); });
  EXPECT_EQ(m_gpu, m_cpu);
  auto [n_cpu, n_gpu] = both([&](Device d) { return multinomial(w.to(d), 4, false); });
  EXPECT_EQ(n_gpu, n_cpu);
  auto [b_cpu, b_gpu] = both([&](Device d) { return bernoulli(w.to(d)); });
  EXPECT_EQ(b_gpu, b_cpu);
  auto [s_cpu, s_gpu] = both([&](Device d) { return bernoulli(zeros({40}, d), 0.3); });
  EXPECT_EQ(s_gpu, s_cpu);
}

TEST(CudaTableopsComposed, NewRowGradientsOnTheDevice) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor a = test::random_tensor({4, 6}, kFloat64, 5) * 3.0;
  const Tensor b = test::random_uniform_tensor({4, 6}, kFloat64, 0.5, 2.0, 6);
  using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<Fn> fns = {
      [](const Tensor& p, const Tensor& q) { return fmod(p, q); },
      [](const Tensor& p, const Tensor& q) { return remainder(p, -q); },
      [](const Tensor& p, const Tensor&) { return leaky_relu(p, 0.2); },
      [](const Tensor& p, const Tensor&) { return elu(p, 0.5); },
      [](const Tensor& p, const Tensor&) { return softplus(p, 2.0, 3.0); },
      [](const Tensor& p, const Tensor&) { return mish(p); },
      [](const Tensor& p, const Tensor&) { return hardswish(p); },
      [](const Tensor& p, const Tensor&) { return erfinv(tanh(p)); },
  };
  for (size_t f = 0; f < fns.size(); ++f) {
    Tensor grads[2][2];
    int k = 0;
    for (Device d : {Device::cpu(), Device::cuda(0)}) {
      Tensor pa = a.to(d).detach().requires_grad_(true), pb = b.to(d).detach().requires_grad_(true);
      Tensor y = fns[f](pa, pb);
      (y * y).sum().backward();
      grads[k][0] = pa.grad();
      grads[k][1] = pb.grad();
      ++k;
    }
    EXPECT_TRUE(all_close(grads[1][0], grads[0][0], {1e-9, 1e-10})) << "function " << f;
    if (grads[0][1].defined()) {
      EXPECT_TRUE(all_close(grads[1][1], grads[0][1], {1e-9, 1e-10})) << "function " << f;
    }
  }
}

}  // namespace
}  // namespace anvil
