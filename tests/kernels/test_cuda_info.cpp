// Device queries work in every build; without a GPU they say "none" and
// asking for a device's properties fails with a clear message.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "kernels/runtime.h"
#include "kernels/cuda_info.h"

namespace anvil {
namespace {

TEST(CudaInfo, CountAndAvailabilityAgree) {
  EXPECT_EQ(cuda::is_available(), cuda::device_count() > 0);
  EXPECT_GE(cuda::device_count(), 0);
}

TEST(CudaInfo, BadDeviceIndexIsAClearError) {
  int n = cuda::device_count();
  try {
    cuda::device_properties(n);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  if (n > 0) {
    auto p = cuda::device_properties(0);
    EXPECT_FALSE(p.name.empty());
    EXPECT_GT(p.total_memory, 0u);
  }
}

TEST(CudaInfo, CpuBackendIsAlwaysRegistered) {
  EXPECT_TRUE(has_runtime(DeviceType::CPU));
  EXPECT_EQ(runtime_for(DeviceType::CPU).type(), DeviceType::CPU);
}

}  // namespace
}  // namespace anvil
