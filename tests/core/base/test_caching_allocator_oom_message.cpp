// The out-of-memory error carries the device's own description
// (DeviceMemory::describe_memory: the CUDA one names the GPU and its
// free/total memory), next to the request and the allocator's statistics.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/base/caching_allocator.h"
#include "core/base/error.h"

namespace anvil {
namespace {

// Host memory standing in for a device with a fixed capacity.
class SmallDevice : public DeviceMemory {
 public:
  explicit SmallDevice(size_t capacity, std::string description)
      : capacity_(capacity), description_(std::move(description)) {}
  void* raw_alloc(size_t nbytes) override {
    if (used_ + nbytes > capacity_) return nullptr;
    used_ += nbytes;
    return std::malloc(nbytes);
  }
  void raw_free(void* ptr) override { std::free(ptr); }  // capacity stays used: enough here
  std::string describe_memory() override { return description_; }

 private:
  size_t capacity_, used_ = 0;
  std::string description_;
};

std::string oom_message(const std::string& description) {
  CachingAllocator a(std::make_unique<SmallDevice>(size_t{64} << 20, description));
  try {
    a.allocate(size_t{100} << 20);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CachingAllocatorOomMessage, IncludesTheDevicesDescription) {
  const std::string msg = oom_message("Device fake:3 has 0.50 GiB free of 1.00 GiB total");
  ASSERT_FALSE(msg.empty()) << "a request over the capacity must fail";
  EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(size_t{100} << 20)), std::string::npos) << "names the request: " << msg;
  EXPECT_NE(msg.find("Device fake:3 has 0.50 GiB free of 1.00 GiB total."), std::string::npos) << msg;
  EXPECT_NE(msg.find("reserved"), std::string::npos) << msg;
}

TEST(CachingAllocatorOomMessage, NoDescriptionNoEmptySentence) {
  const std::string msg = oom_message("");
  ASSERT_FALSE(msg.empty());
  EXPECT_EQ(msg.find(". ."), std::string::npos) << msg;
  EXPECT_EQ(msg.find(" ."), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil
