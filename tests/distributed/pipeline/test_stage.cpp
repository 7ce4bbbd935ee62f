// PipelineStage without a second process: which device its activations and
// gradients travel on for each kind of group (stage.h, "Transport"), and the
// errors for a group it cannot use and a step exchange() cannot post.
#include <gtest/gtest.h>

#include <string>

#include "core/base/error.h"
#include "distributed/pipeline/stage.h"
#include "distributed/process_group/process_group_factory.h"
#include "kernels/cuda_info.h"
#include "nn/layers/layers.h"

namespace anvil::distributed::pipeline {
namespace {

// A group that only has a name: enough to build a stage, never used to talk
// (a GPU transport's all-reduce at construction does nothing).
class NamedGroup : public ProcessGroup {
 public:
  explicit NamedGroup(std::string name) : ProcessGroup(0, 2), name_(std::move(name)) {}
  std::string backend_name() const override { return name_; }
  WorkHandle all_reduce(Tensor&, ReduceOp) override { return completed_work(); }
  WorkHandle broadcast(Tensor&, int) override { fail("NamedGroup: no traffic"); }
  WorkHandle all_gather(Tensor&, const Tensor&) override { fail("NamedGroup: no traffic"); }
  WorkHandle reduce_scatter(Tensor&, const Tensor&, ReduceOp) override { fail("NamedGroup: no traffic"); }
  WorkHandle send(const Tensor&, int, int) override { fail("NamedGroup: no traffic"); }
  WorkHandle recv(Tensor&, int, int) override { fail("NamedGroup: no traffic"); }
  WorkHandle barrier() override { fail("NamedGroup: no traffic"); }

 private:
  std::string name_;
};

Device transport(const std::string& backend, Device device) {
  PipelineStage stage(std::make_shared<nn::Tanh>(), std::make_shared<NamedGroup>(backend), {.device = device});
  return stage.transport_device();
}

TEST(PipelineStage, CpuStagesAndGlooOnlyGroupsTravelThroughTheHost) {
  EXPECT_EQ(transport("gloo", Device::cpu()), Device::cpu());
  EXPECT_EQ(transport("cpu:gloo,cuda:nccl", Device::cpu()), Device::cpu());
  // A CUDA stage on a group that cannot carry CUDA tensors.
  EXPECT_EQ(transport("gloo", Device::cuda(0)), Device::cpu());
}

TEST(PipelineStage, CudaStagesOnAGroupWithNcclTravelOnTheGpu) {
  if (!nccl_available()) GTEST_SKIP() << "this build has no NCCL backend";
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA device for a CUDA stage";
  EXPECT_EQ(transport("cpu:gloo,cuda:nccl", Device::cuda(0)), Device::cuda(0));
}

TEST(PipelineStage, RefusesAGroupWithoutACpuSide) {
  try {
    transport("nccl", Device::cuda(0));
    FAIL() << "no error for an NCCL-only group";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'nccl' process group carries CUDA tensors only"), std::string::npos) << m;
    EXPECT_NE(m.find("use backend \"auto\""), std::string::npos) << m;
  }
}

TEST(PipelineStage, ExchangePostsOnlySendsAndReceives) {
  PipelineStage stage(std::make_shared<nn::Tanh>(), std::make_shared<NamedGroup>("gloo"));
  try {
    stage.exchange({{StepKind::Forward, 3}});
    FAIL() << "no error for a Forward step";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step F3 of stage 0 is not a send or receive"), std::string::npos) << e.what();
  }
  // Stage 0 has no previous stage: its receive of an activation is a misuse.
  EXPECT_THROW(stage.exchange({{StepKind::RecvActivation, 0}}), Error);
}

}  // namespace
}  // namespace anvil::distributed::pipeline
