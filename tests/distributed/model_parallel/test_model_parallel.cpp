// Layer-split model parallelism in one process: the split model computes the
// same outputs and gradients as the unsplit one, and places each part where
// it was asked to.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "distributed/model_parallel/model_parallel.h"
#include "kernels/cuda_info.h"
#include "nn/layers/layers.h"

namespace anvil::distributed {
namespace {

std::shared_ptr<nn::Sequential> make_mlp() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(6, 12), std::make_shared<nn::Tanh>(),
                                          std::make_shared<nn::Linear>(12, 12), std::make_shared<nn::Tanh>(),
                                          std::make_shared<nn::Linear>(12, 3));
}

double max_abs_diff(const Tensor& a, const Tensor& b) { return (a.cpu() - b.cpu()).abs().max().item<double>(); }

TEST(ModelParallel, BalancedBoundaries) {
  EXPECT_EQ(balanced_boundaries({1, 1, 1, 1}, 2), (Boundaries{2}));
  EXPECT_EQ(balanced_boundaries({10, 1, 1, 1, 1, 10}, 3), (Boundaries{1, 5}));
  EXPECT_EQ(balanced_boundaries({5, 5, 5}, 3), (Boundaries{1, 2}));
  EXPECT_EQ(balanced_boundaries({5, 5, 5}, 1), (Boundaries{}));
  EXPECT_THROW(balanced_boundaries({1, 1}, 3), Error);
  EXPECT_THROW(check_boundaries({2, 2}, 5, 3), Error);  // an empty part
  EXPECT_THROW(check_boundaries({5}, 5, 2), Error);  // past the end
  EXPECT_THROW(check_boundaries({1}, 5, 3), Error);  // wrong count
}

TEST(ModelParallel, SplitOnCpuPartsMatchesUnsplitModel) {
  manual_seed(3);
  auto reference = make_mlp();
  manual_seed(3);
  auto seq = make_mlp();
  auto mp = split_across_devices(seq, {Device::cpu(), Device::cpu(), Device::cpu()}, {2, 4});
  ASSERT_EQ(mp->num_parts(), 3u);
  EXPECT_EQ(mp->part(1).begin, 2u);
  EXPECT_EQ(mp->part(1).end, 4u);
  // Same names as the unsplit model, so checkpoints load either way.
  auto names = [](const nn::Module& m) {
    std::vector<std::string> out;
    for (auto& [n, p] : m.named_parameters()) out.push_back(n);
    return out;
  };
  EXPECT_EQ(names(*mp), names(*reference));

  Tensor x = randn({5, 6});
  Tensor y = randn({5, 3});
  mse_loss(reference->forward(x), y).backward();
  Tensor out = mp->forward(x);
  EXPECT_LT(max_abs_diff(out, reference->forward(x)), 1e-6);
  mse_loss(out, y).backward();
  auto ref_params = reference->named_parameters();
  auto mp_params = mp->named_parameters();
  for (size_t i = 0; i < ref_params.size(); ++i) {
    ASSERT_TRUE(mp_params[i].second.grad().defined()) << mp_params[i].first;
    EXPECT_LT(max_abs_diff(mp_params[i].second.grad(), ref_params[i].second.grad()), 1e-6) << mp_params[i].first;
  }
  std::string placement = mp->placement();
  EXPECT_NE(placement.find("part 2 on cpu: layers 4-4 (Linear)"), std::string::npos) << placement;
  EXPECT_EQ(mp->part_parameters(0).size(), 2u);  // Linear's weight and bias
}

TEST(ModelParallel, BalancedSplitByDefault) {
  auto seq = make_mlp();  // Linear(6,12)=84, Tanh, Linear(12,12)=156, Tanh, Linear(12,3)=39
  auto mp = split_across_devices(seq, {Device::cpu(), Device::cpu()});
  EXPECT_EQ(mp->boundaries().size(), 1u);
  EXPECT_EQ(mp->boundaries()[0], 2u);
}

TEST(ModelParallel, StageOfSequentialSharesModulesAndNames) {
  auto seq = make_mlp();
  auto stage = stage_of_sequential(*seq, 1, 2, {2});
  ASSERT_EQ(stage->size(), 3u);
  EXPECT_EQ(stage->named_parameters()[0].first, "2.weight");
  EXPECT_TRUE(stage->named_parameters()[0].second.same(seq->named_parameters()[2].second));
  EXPECT_THROW(stage_of_sequential(*seq, 2, 2, {2}), Error);
}

TEST(ModelParallel, DevicePlacementOnCuda) {
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA GPU: device placement across GPUs not checked";
  // The same GPU listed twice still exercises the placement logic and the hops.
  std::vector<Device> devices = {Device::cpu(), Device::cuda(0), Device::cuda(cuda::device_count() > 1 ? 1 : 0)};
  manual_seed(5);
  auto reference = make_mlp();
  manual_seed(5);
  auto mp = split_across_devices(make_mlp(), devices, {1, 3});
  for (size_t i = 0; i < devices.size(); ++i)
    for (const Tensor& p : mp->part_parameters(i)) EXPECT_EQ(p.device(), devices[i]);
  Tensor x = randn({4, 6});
  Tensor out = mp->forward(x);
  EXPECT_EQ(out.device(), devices.back());
  EXPECT_LT(max_abs_diff(out, reference->forward(x)), 1e-4);
  out.sum().backward();
  reference->forward(x).sum().backward();
  auto ref_params = reference->named_parameters();
  auto mp_params = mp->named_parameters();
  for (size_t i = 0; i < ref_params.size(); ++i) {
    EXPECT_EQ(mp_params[i].second.grad().device(), mp_params[i].second.device());
    EXPECT_LT(max_abs_diff(mp_params[i].second.grad(), ref_params[i].second.grad()), 1e-4) << mp_params[i].first;
  }
}

}  // namespace
}  // namespace anvil::distributed
