// core/cuda.h, the anvil::cuda that nn, distributed, samples and users see:
// the device queries (re-exported from kernels/cuda_info.h) and
// cuda::synchronize. Runs in every build; without a GPU there is nothing to
// wait for and a device index is a clear error.
#include "core/cuda.h"

#include <gtest/gtest.h>

#include <string>

#include "core/base/error.h"
#include "core/ops.h"
#include "kernels/runtime.h"

namespace anvil {
namespace {

// nn and the samples ask cuda::is_available() where they used to ask the
// kernels layer's has_backend (now has_runtime) for DeviceType::CUDA: the two
// must agree.
TEST(Cuda, AvailableExactlyWhenThereIsACudaRuntime) {
  EXPECT_EQ(cuda::is_available(), has_runtime(DeviceType::CUDA));
  EXPECT_EQ(cuda::is_available(), cuda::device_count() > 0);
}

TEST(Cuda, SynchronizeWaitsForEveryDeviceAndRejectsABadIndex) {
  cuda::synchronize();  // no GPU: nothing to wait for
  const int n = cuda::device_count();
  for (int bad : {n, -2}) {
    try {
      cuda::synchronize(bad);
      FAIL() << "expected an error for device " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
    }
  }
  if (n == 0) GTEST_SKIP() << "no CUDA device: the synchronize of queued work is not exercised";
  Tensor x = ones({256, 256}, TensorOptions().device(Device::cuda(0)));
  Tensor y = matmul(x, x);
  cuda::synchronize(0);
  cuda::synchronize();
  EXPECT_EQ(y.cpu().select(0, 0).select(0, 0).item<float>(), 256.0f);
}

}  // namespace
}  // namespace anvil
