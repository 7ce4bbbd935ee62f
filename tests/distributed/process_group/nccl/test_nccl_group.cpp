// NcclProcessGroup on one rank: needs a GPU and a CUDA build with NCCL, and
// skips with a clear message otherwise (compiles in every build: it reaches
// NCCL only through make_process_group).
#include <gtest/gtest.h>

#include "core/factory.h"
#include "distributed/distributed.h"
#include "kernels/cuda_info.h"

namespace {

using namespace anvil;
using namespace anvil::distributed;
using namespace std::chrono_literals;

TEST(NcclGroup, OneRankAllReduceBroadcastAllGather) {
  if (!nccl_available()) GTEST_SKIP() << "this build has no NCCL backend (no CUDA or no NCCL at configure time)";
  if (!cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible";
  auto store = std::make_shared<TCPStore>(TCPStoreOptions{.port = 0, .is_server = true, .timeout = 30s});
  MakeProcessGroupOptions o;
  o.group.timeout = 30s;
  auto group = make_process_group(store, 0, 1, o);  // auto: NCCL for the CUDA tensors
  auto on_gpu = TensorOptions().dtype(kFloat32).device(Device::cuda(0));

  Tensor t = anvil::full({1000}, 3.0, on_gpu);
  group->all_reduce(t, ReduceOp::Sum)->wait();
  for (float v : t.cpu().to_vector<float>()) EXPECT_EQ(v, 3.0f);
  group->all_reduce(t, ReduceOp::Avg)->wait();
  group->broadcast(t, 0)->wait();
  Tensor out = anvil::zeros({1000}, on_gpu);
  group->all_gather(out, t)->wait();
  for (float v : out.cpu().to_vector<float>()) EXPECT_EQ(v, 3.0f);
  group->barrier()->wait();

  Tensor cpu = anvil::full({4}, 2.0, kFloat32);  // CPU tensors still go to Gloo
  group->all_reduce(cpu)->wait();
  EXPECT_EQ(cpu.to_vector<float>()[0], 2.0f);
}

}  // namespace
