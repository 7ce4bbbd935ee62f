// Pinned memory, non_blocking transfers, to(TensorOptions) and record_stream
// from the core side. Without a GPU: pin_memory fails with a clear message,
// and everything else keeps its CPU meaning. With one: pinned copies round-trip.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/ops.h"
#include "kernels/runtime.h"

namespace anvil {
namespace {

bool has_cuda() { return has_runtime(DeviceType::CUDA); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PinnedMemory, OrdinaryTensorsAreNotPinned) {
  Tensor t = randn({3, 4});
  EXPECT_FALSE(t.is_pinned());
  EXPECT_FALSE(t.clone().is_pinned());
  EXPECT_FALSE(t.t().contiguous().is_pinned());
}

TEST(PinnedMemory, WithoutAGpuPinningIsAClearError) {
  if (has_cuda()) GTEST_SKIP() << "a CUDA backend is available: pinning works here (see PinnedTensorsCopyLikeAnyOther)";
  std::string msg = error_of([] { randn({2, 2}).pin_memory(); });
  ASSERT_FALSE(msg.empty()) << "pin_memory without a GPU must raise";
  EXPECT_NE(msg.find("pin_memory"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no CUDA backend"), std::string::npos) << msg;
}

TEST(PinnedMemory, PinnedTensorsCopyLikeAnyOther) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA backend: pinned memory needs the CUDA driver";
  Tensor t = randn({5, 7}).t();  // non-contiguous source: pinned copy is contiguous
  Tensor p = t.pin_memory();
  EXPECT_TRUE(p.is_pinned());
  EXPECT_TRUE(p.is_contiguous());
  EXPECT_TRUE(p.pin_memory().same(p)) << "pinning a pinned tensor returns it";
  EXPECT_TRUE(p[1].is_pinned()) << "views share the pinned storage";
  EXPECT_EQ(p.to_vector<float>(), t.to_vector<float>());
  Tensor d = p.to(Device::cuda(), /*non_blocking=*/true);
  EXPECT_EQ(d.cpu().to_vector<float>(), t.to_vector<float>());
}

TEST(PinnedMemory, OnlyCpuTensorsCanBePinned) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA backend";
  std::string msg = error_of([] { randn({2}).cuda().pin_memory(); });
  EXPECT_NE(msg.find("only CPU tensors"), std::string::npos) << msg;
}

TEST(NonBlocking, CpuToCpuIsTheSameTensorAndFlagsAreHarmless) {
  Tensor t = randn({4});
  EXPECT_TRUE(t.to(Device::cpu(), /*non_blocking=*/true).same(t));
  EXPECT_TRUE(t.to("cpu").same(t));
  Tensor d = t.to(Device::cpu(), kFloat64, /*non_blocking=*/true);
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_EQ(d.to_vector<float>(), t.to_vector<float>());
}

TEST(NonBlocking, ToOptionsSetsDeviceAndDtype) {
  Tensor t = arange(6).reshape({2, 3});  // int64
  Tensor f = t.to(TensorOptions().dtype(kFloat32).device(Device::cpu()));
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(f.shape(), (Shape{2, 3}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(t.to(TensorOptions(kInt64)).same(t)) << "nothing to change: the tensor itself";
}

TEST(NonBlocking, ToOptionsKeepsTheGradientPath) {
  Tensor x = randn({3}).requires_grad_();
  Tensor y = x.to(TensorOptions().dtype(kFloat64), /*non_blocking=*/true);
  y.sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(RecordStream, CpuTensorsHaveNoStreams) {
  std::string msg = error_of([] { randn({2}).record_stream(Stream{}); });
  EXPECT_NE(msg.find("only CUDA tensors"), std::string::npos) << msg;
}

TEST(RecordStream, StreamMustBeOnTheTensorsDevice) {
  if (!has_cuda()) GTEST_SKIP() << "no CUDA backend";
  std::string msg = error_of([] { randn({2}).cuda().record_stream(Stream{Device::cpu(), 0}); });
  EXPECT_NE(msg.find("the stream is on cpu"), std::string::npos) << msg;
}

}  // namespace
}  // namespace anvil
