// DataLoader pin_memory: batches are pinned by the workers when a GPU is
// usable, silently left as they are otherwise; values never change.
#include <gtest/gtest.h>

#include "core/ops.h"
#include "kernels/runtime.h"
#include "nn/data/data.h"

namespace anvil::nn::data {
namespace {

std::shared_ptr<TensorDataset> numbered(int64_t n) {
  Tensor idx = arange(n, kFloat32);
  return std::make_shared<TensorDataset>(stack({idx, idx * 3.0}, 1), arange(n));
}

void check_epoch(DataLoader& loader, bool expect_pinned, Device expect_device) {
  int64_t next = 0;
  for (const Example& b : loader) {
    EXPECT_EQ(b.data.is_pinned(), expect_pinned);
    EXPECT_EQ(b.target.is_pinned(), expect_pinned);
    EXPECT_EQ(b.data.device(), expect_device);
    auto t = b.target.to_vector<int64_t>();
    auto d = b.data.to_vector<float>();
    for (size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(t[i], next++);
      EXPECT_EQ(d[2 * i], static_cast<float>(t[i]));
      EXPECT_EQ(d[2 * i + 1], 3.0f * static_cast<float>(t[i]));
    }
  }
  EXPECT_EQ(next, 10);
}

TEST(DataLoaderPinMemory, PinsWhenAGpuIsUsableAndIsHarmlessOtherwise) {
  const bool gpu = has_runtime(DeviceType::CUDA);
  for (int workers : {0, 2}) {
    SCOPED_TRACE("num_workers " + std::to_string(workers));
    DataLoader loader(numbered(10), {.batch_size = 3, .num_workers = workers, .pin_memory = true});
    check_epoch(loader, /*expect_pinned=*/gpu, Device::cpu());
  }
}

TEST(DataLoaderPinMemory, PinnedBatchesReachTheGpu) {
  if (!has_runtime(DeviceType::CUDA)) GTEST_SKIP() << "no CUDA backend: nothing to deliver batches to";
  DataLoader loader(numbered(10), {.batch_size = 4, .num_workers = 2, .pin_memory = true, .device = Device::cuda(0)});
  check_epoch(loader, /*expect_pinned=*/false, Device::cuda(0));
}

}  // namespace
}  // namespace anvil::nn::data
