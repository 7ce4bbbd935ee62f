// The modules of issue 14 on the CUDA backend against the CPU backend: same
// parameters, same float32 inputs; outputs and the gradients of the inputs
// and of every parameter. Autocast on CUDA: the same op dtypes as on the CPU.
#include <gtest/gtest.h>

#include <functional>

#include "core/autocast.h"
#include "nn/layers/layers.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace anvil {
namespace {

using Fn = std::function<Tensor(nn::Module&, const std::vector<Tensor>&)>;

struct Result {
  Tensor out;
  std::vector<Tensor> grads;  // inputs that require grad, then parameters
};

Result run_on(Device device, nn::Module& m, const Fn& f, const std::vector<Tensor>& cpu_inputs, const Tensor& up) {
  m.to(device);
  m.zero_grad();
  std::vector<Tensor> in;
  for (const Tensor& t : cpu_inputs) {
    Tensor d = t.defined() ? t.to(device).detach() : t;
    if (d.defined() && d.is_floating_point()) d.requires_grad_(true);
    in.push_back(d);
  }
  Result r;
  Tensor out = f(m, in);
  (out.to(kFloat32) * up.to(device)).sum().backward();
  r.out = out.detach().cpu();
  for (const Tensor& t : in)
    if (t.defined() && t.requires_grad()) r.grads.push_back(t.grad().cpu());
  for (const Tensor& p : m.parameters()) r.grads.push_back(p.grad().defined() ? p.grad().cpu() : Tensor());
  m.to(Device::cpu());
  return r;
}

void expect_cuda_matches_cpu(nn::Module& m, const Fn& f, const std::vector<Tensor>& inputs,
                             test::Tolerance tol = {1e-4, 1e-5}) {
  Tensor probe;
  {
    NoGradGuard ng;
    probe = f(m, inputs);
  }
  Tensor up = test::random_tensor(probe.shape(), kFloat32, 99);
  Result cpu = run_on(Device::cpu(), m, f, inputs, up);
  Result cuda = run_on(Device::cuda(0), m, f, inputs, up);
  EXPECT_CUDA_CLOSE(cuda.out, cpu.out, tol);
  ASSERT_EQ(cuda.grads.size(), cpu.grads.size());
  for (size_t i = 0; i < cpu.grads.size(); ++i) {
    ASSERT_EQ(cuda.grads[i].defined(), cpu.grads[i].defined()) << "gradient " << i;
    if (cpu.grads[i].defined()) {
      EXPECT_CUDA_CLOSE(cuda.grads[i], cpu.grads[i], tol) << "gradient " << i;
    }
  }
}

Tensor rnd(const Shape& s, uint64_t seed) { return test::random_tensor(s, kFloat32, seed); }

TEST(CudaModules, MultiheadAttentionBothPathsWithMasks) {
  ANVIL_SKIP_WITHOUT_GPU();
  manual_seed(1);
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 2).batch_first(true));
  Tensor kpm = zeros({2, 5}, kBool);
  kpm[1][4].fill_(true);
  for (bool need_weights : {false, true}) {
    SCOPED_TRACE(need_weights ? "composed" : "fused");
    expect_cuda_matches_cpu(
        m,
        [&](nn::Module& mod, const std::vector<Tensor>& in) {
          auto& mha = static_cast<nn::MultiheadAttention&>(mod);
          auto [out, w] = mha.forward(
              in[0], in[1], in[2],
              {.key_padding_mask = kpm.to(in[0].device()), .need_weights = need_weights, .is_causal = true});
          return need_weights ? cat({out.flatten(), w.flatten()}) : out;
        },
        {rnd({2, 5, 8}, 2), rnd({2, 5, 8}, 3), rnd({2, 5, 8}, 4)});
  }
}

TEST(CudaModules, LstmAndGruBidirectionalTwoLayers) {
  ANVIL_SKIP_WITHOUT_GPU();
  manual_seed(2);
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
  expect_cuda_matches_cpu(lstm,
                          [](nn::Module& mod, const std::vector<Tensor>& in) {
                            auto [y, s] = static_cast<nn::LSTM&>(mod).forward(in[0], std::make_tuple(in[1], in[2]));
                            return cat({y.flatten(), std::get<0>(s).flatten(), std::get<1>(s).flatten()});
                          },
                          {rnd({2, 4, 3}, 5), rnd({4, 2, 4}, 6), rnd({4, 2, 4}, 7)});
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2));
  expect_cuda_matches_cpu(gru,
                          [](nn::Module& mod, const std::vector<Tensor>& in) {
                            auto [y, h] = static_cast<nn::GRU&>(mod).forward(in[0]);
                            return cat({y.flatten(), h.flatten()});
                          },
                          {rnd({4, 2, 3}, 8)});
}

TEST(CudaModules, BatchNorm1dUpsamplePixelShuffle) {
  ANVIL_SKIP_WITHOUT_GPU();
  auto one = [](nn::Module& mod, const std::vector<Tensor>& in) { return mod.forward(in[0]); };
  nn::BatchNorm1d bn(3);
  expect_cuda_matches_cpu(bn, one, {rnd({4, 3, 5}, 9)});
  expect_cuda_matches_cpu(bn, one, {rnd({6, 3}, 10)});
  nn::Upsample near(nn::UpsampleOptions().scale_factor({2.0}));
  expect_cuda_matches_cpu(near, one, {rnd({1, 2, 3, 4}, 11)});
  nn::Upsample bil(nn::UpsampleOptions().size({5, 7}).mode(kBilinear));
  expect_cuda_matches_cpu(bil, one, {rnd({1, 2, 3, 4}, 12)});
  nn::PixelShuffle ps(2);
  expect_cuda_matches_cpu(ps, one, {rnd({2, 8, 3, 3}, 13)});
  nn::PixelUnshuffle pu(2);
  expect_cuda_matches_cpu(pu, one, {rnd({2, 2, 4, 6}, 14)});
}

TEST(CudaModules, AutocastGivesTheSameDtypesAndCloseValues) {
  ANVIL_SKIP_WITHOUT_GPU();
  manual_seed(3);
  auto model = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Linear>(8, 16), std::make_shared<nn::LayerNorm>(16), std::make_shared<nn::Linear>(16, 4));
  expect_cuda_matches_cpu(*model,
                          [](nn::Module& mod, const std::vector<Tensor>& in) {
                            AutocastGuard autocast(kBFloat16);
                            Tensor y = mod.forward(in[0]);
                            EXPECT_EQ(y.dtype(), kBFloat16);
                            Tensor p = softmax(y, -1);
                            EXPECT_EQ(p.dtype(), kFloat32);
                            return p;
                          },
                          {rnd({6, 8}, 15)}, {3e-2, 1e-2});
}

}  // namespace
}  // namespace anvil
