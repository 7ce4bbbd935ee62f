// DataParallel on the CPU: with one device it is the module itself; with the
// CPU listed several times it runs the replicated path (scatter, threads,
// gather, gradients summed into the originals through autograd), which must
// give the module's own outputs and gradients. Over two GPUs (real, or the
// emulated GPU's cuda:0 and cuda:1) the same holds against the CPU module.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops.h"
#include "distributed/ddp/data_parallel.h"
#include "kernels/cuda_info.h"
#include "nn/layers/layers.h"

namespace anvil::distributed {
namespace {

std::shared_ptr<nn::Module> make_model() {
  auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(5, 8), std::make_shared<nn::Tanh>(),
                                            std::make_shared<nn::Linear>(8, 3));
  m->to(kFloat64);
  return m;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// Forward + backward through `run`, returning the output and the gradients.
template <class Run>
std::pair<Tensor, std::vector<Tensor>> outputs_and_grads(nn::Module& params_of, Run run, const Tensor& x,
                                                         const Tensor& y) {
  params_of.zero_grad();
  Tensor out = run(x);
  mse_loss(out, y).backward();
  std::vector<Tensor> grads;
  for (const Tensor& p : params_of.parameters()) grads.push_back(p.grad().clone());
  return {out.detach(), grads};
}

TEST(DataParallel, OneDeviceRunsTheModule) {
  auto model = make_model();
  auto dp = std::make_shared<DataParallel>(model, nullptr);
  ASSERT_EQ(dp->devices().size(), 1u);
  Tensor x = randn({7, 5}, kFloat64), y = randn({7, 3}, kFloat64);
  auto [out_ref, grads_ref] = outputs_and_grads(
      *model, [&](const Tensor& t) { return model->forward(t); }, x, y);
  auto [out, grads] = outputs_and_grads(
      *model, [&](const Tensor& t) { return dp->forward(t); }, x, y);
  EXPECT_EQ(max_abs_diff(out, out_ref), 0.0);
  for (size_t i = 0; i < grads.size(); ++i) EXPECT_EQ(max_abs_diff(grads[i], grads_ref[i]), 0.0);
  EXPECT_EQ(dp->parameters().size(), model->parameters().size());
}

TEST(DataParallel, ReplicatedPathMatchesTheModule) {
  auto model = make_model();
  // Replicas start from their own random values: forward must rebind them to the module's.
  auto dp = std::make_shared<DataParallel>(
      model, make_model, DataParallelOptions{.devices = {Device::cpu(), Device::cpu(), Device::cpu()}});
  for (int64_t batch : {9, 7, 2}) {  // even split, uneven split, fewer rows than devices
    Tensor x = randn({batch, 5}, kFloat64), y = randn({batch, 3}, kFloat64);
    auto [out_ref, grads_ref] = outputs_and_grads(
        *model, [&](const Tensor& t) { return model->forward(t); }, x, y);
    auto [out, grads] = outputs_and_grads(
        *model, [&](const Tensor& t) { return dp->forward(t); }, x, y);
    EXPECT_LT(max_abs_diff(out, out_ref), 1e-14) << "batch " << batch;
    ASSERT_EQ(grads.size(), grads_ref.size());
    for (size_t i = 0; i < grads.size(); ++i)
      EXPECT_LT(max_abs_diff(grads[i], grads_ref[i]), 1e-13) << "batch " << batch;
  }
  // A training step on the originals is seen by the next forward's replicas.
  {
    NoGradGuard no_grad;
    for (Tensor p : model->parameters()) p.detach().mul_(0.5);
  }
  Tensor x = randn({6, 5}, kFloat64);
  NoGradGuard no_grad;
  EXPECT_LT(max_abs_diff(dp->forward(x), model->forward(x)), 1e-14);
}

// A module whose forward takes (x, mask): x [N, T, 5] averaged over the
// positions mask [N, T] keeps (1 = keep), then a linear layer.
class MaskedPool : public nn::Module {
 public:
  MaskedPool() : nn::Module("MaskedPool"), proj(std::make_shared<nn::Linear>(5, 3)) {
    register_module("proj", proj);
    to(kFloat64);
  }
  Tensor forward_inputs(const std::vector<Tensor>& in) override {
    ANVIL_CHECK(in.size() == 2, "MaskedPool: takes (x, mask), got ", in.size(), " inputs");
    const Tensor keep = in[1].unsqueeze(-1);
    return proj->forward(sum(in[0] * keep, {1}) / sum(keep, {1}));
  }
  std::shared_ptr<nn::Linear> proj;
};

TEST(DataParallel, SeveralInputsAreEachSplitAlongTheBatch) {
  auto model = std::make_shared<MaskedPool>();
  auto dp = std::make_shared<DataParallel>(
      model, [] { return std::make_shared<MaskedPool>(); },
      DataParallelOptions{.devices = {Device::cpu(), Device::cpu(), Device::cpu()}});
  for (int64_t batch : {9, 7, 2}) {
    Tensor x = randn({batch, 4, 5}, kFloat64), y = randn({batch, 3}, kFloat64);
    // Random masks with position 0 always kept, so no row divides by zero.
    Tensor mask = (rand({batch, 4}, kFloat64) < 0.5).to(kFloat64);
    mask.narrow(1, 0, 1).fill_(1.0);
    auto [out_ref, grads_ref] = outputs_and_grads(
        *model, [&](const Tensor& t) { return (*model)(t, mask); }, x, y);
    auto [out, grads] = outputs_and_grads(
        *model, [&](const Tensor& t) { return (*dp)(t, mask); }, x, y);
    ASSERT_EQ(out.shape(), (Shape{batch, 3}));
    EXPECT_LT(max_abs_diff(out, out_ref), 1e-14) << "batch " << batch;
    ASSERT_EQ(grads.size(), grads_ref.size());
    for (size_t i = 0; i < grads.size(); ++i)
      EXPECT_LT(max_abs_diff(grads[i], grads_ref[i]), 1e-13) << "batch " << batch;
    // The mask matters: all-ones gives another output.
    NoGradGuard no_grad;
    if (batch > 2) {
      EXPECT_GT(max_abs_diff((*dp)(x, ones({batch, 4}, kFloat64)), out), 1e-6);
    }
  }
  // Every input must share the batch size, or the error says which does not.
  Tensor x = randn({6, 4, 5}, kFloat64);
  try {
    (*dp)(x, ones({5, 4}, kFloat64));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("DataParallel"), std::string::npos) << m;
    EXPECT_NE(m.find("input 1"), std::string::npos) << m;
    EXPECT_NE(m.find("[5, 4]"), std::string::npos) << m;
    EXPECT_NE(m.find("[6, 4, 5]"), std::string::npos) << m;
  }
}

TEST(DataParallel, ChecksReplicaArchitecture) {
  auto model = make_model();
  auto wrong = [] {
    auto m = std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(5, 3));
    m->to(kFloat64);
    return std::static_pointer_cast<nn::Module>(m);
  };
  EXPECT_THROW(DataParallel(model, wrong, {.devices = {Device::cpu(), Device::cpu()}}), Error);
  EXPECT_THROW(DataParallel(model, nullptr, {.devices = {Device::cpu(), Device::cpu()}}), Error);
}

TEST(DataParallel, TwoGpusMatchTheCpuModule) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices (the emulated GPU has two by default)";
  auto model = make_model();
  auto reference = make_model();
  reference->load_state_dict(model->state_dict());
  model->to(Device::cuda(0));
  auto dp = std::make_shared<DataParallel>(model, make_model,
                                           DataParallelOptions{.devices = {Device::cuda(0), Device::cuda(1)}});
  ASSERT_EQ(dp->devices().size(), 2u);
  for (int64_t batch : {8, 5}) {  // even and uneven split
    Tensor x = randn({batch, 5}, kFloat64), y = randn({batch, 3}, kFloat64);
    auto [out_ref, grads_ref] = outputs_and_grads(
        *reference, [&](const Tensor& t) { return reference->forward(t); }, x, y);
    auto [out, grads] = outputs_and_grads(
        *model, [&](const Tensor& t) { return dp->forward(t.to(Device::cuda(0))); }, x, y.to(Device::cuda(0)));
    EXPECT_EQ(out.device(), Device::cuda(0));
    EXPECT_LT(max_abs_diff(out.cpu(), out_ref), 1e-12) << "batch " << batch;
    ASSERT_EQ(grads.size(), grads_ref.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      EXPECT_EQ(grads[i].device(), Device::cuda(0)) << "gradients land on the module's device";
      EXPECT_LT(max_abs_diff(grads[i].cpu(), grads_ref[i]), 1e-12) << "batch " << batch << ", parameter " << i;
    }
  }
}

}  // namespace
}  // namespace anvil::distributed
