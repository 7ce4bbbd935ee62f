// The optimizers written with tensor ops (RMSprop, Adagrad, Adadelta, Adamax, NAdam,
// RAdam, Lion, LBFGS, Adam/AdamW's amsgrad) on CUDA parameters: the same double-precision
// references as on the CPU (float32 tolerance), LBFGS against the CPU run.
#include <gtest/gtest.h>

#include "nn/optim/optim.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/nn/optim/optim_test_util.h"
#include "tests/nn/optim/optimizer_references.h"

namespace anvil::nn::optim::test {
namespace {

TEST(CudaOptimizers, TensorOpOptimizersMatchTheReferencesOnCuda) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Device dev = Device::cuda(0);
  check_steps<RMSprop>(RMSpropOptions(0.01).momentum(0.5).centered(true),
                       RefRMSprop{0.01, 0.99, 1e-8, 0, 0.5, true, false}, 3, 1e-5, kFloat32, dev);
  check_steps<Adagrad>(AdagradOptions(0.1), RefAdagrad{0.1, 0, 0, 0, 1e-10, false}, 3, 1e-5, kFloat32, dev);
  check_steps<Adadelta>(AdadeltaOptions(1.0).weight_decay(0.1), RefAdadelta{1.0, 0.9, 1e-6, 0.1, false}, 3, 1e-5,
                        kFloat32, dev);
  check_steps<Adamax>(AdamaxOptions(0.01), RefAdamax{0.01, 0.9, 0.999, 1e-8, 0}, 3, 1e-5, kFloat32, dev);
  check_steps<NAdam>(NAdamOptions(0.01), RefNAdam{0.01, 0.9, 0.999, 1e-8, 0, 4e-3, false}, 3, 1e-5, kFloat32, dev);
  // beta2 0.9: rho_t passes 5 at step 6, so seven steps take both RAdam branches.
  check_steps<RAdam>(RAdamOptions(0.01).betas({0.9, 0.9}), RefRAdam{0.01, 0.9, 0.9, 1e-8, 0, false}, 7, 1e-5, kFloat32,
                     dev);
  check_steps<Lion>(LionOptions(0.01), RefLion{0.01, 0.9, 0.99, 0, false}, 3, 1e-5, kFloat32, dev);
  check_steps<AdamW>(AdamWOptions(0.01).betas({0.8, 0.5}).amsgrad(true),
                     RefAMSGrad{0.01, 0.8, 0.5, 1e-8, 1e-2, true, false}, 4, 1e-5, kFloat32, dev);
}

TEST(CudaOptimizers, LbfgsWithLineSearchMatchesTheCpu) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Tensor target = from_vector(std::vector<float>{0.5f, -1.0f, 2.0f}, {3}, kFloat32);
  auto run = [&](Device dev) {
    Tensor w = zeros({3}, TensorOptions().dtype(kFloat32).device(dev)).requires_grad_(true);
    const Tensor tg = target.to(dev);
    LBFGS opt({w}, LBFGSOptions(1).line_search_fn("strong_wolfe").max_iter(10));
    auto closure = [&] {
      opt.zero_grad();
      Tensor d = w - tg;
      Tensor loss = (d * d).sum() + (d * d * d * d).sum();
      loss.backward();
      return loss;
    };
    opt.step(closure);
    return values(w);
  };
  const Vec cpu = run(Device::cpu()), gpu = run(Device::cuda(0));
  expect_near(gpu, cpu, 1e-4, "cuda vs cpu");
  expect_near(cpu, values(target), 1e-3, "solved");
}

}  // namespace
}  // namespace anvil::nn::optim::test
