// core/stream.h: synchronize, the current stream and its guard, events. The
// CPU half runs everywhere; the CUDA half runs where a GPU is (the emulated
// GPU in CI, ./test.sh --emulated-gpu) and skips elsewhere, saying so.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/ops.h"
#include "core/stream.h"
#include "kernels/cuda_info.h"

namespace anvil {
namespace {

TEST(Stream, CpuHasOneStreamAndEventsCompleteWhenRecorded) {
  EXPECT_EQ(current_stream(Device::cpu()), (Stream{Device::cpu(), 0}));
  EXPECT_EQ(new_stream(Device::cpu()), (Stream{Device::cpu(), 0}));
  synchronize(Device::cpu());
  {
    StreamGuard guard(new_stream(Device::cpu()));
    EXPECT_EQ(current_stream(Device::cpu()).id, 0u);
  }
  EXPECT_EQ(native_stream(current_stream(Device::cpu())), nullptr);

  Event start(true), stop(true);
  EXPECT_TRUE(start.query());  // nothing recorded: nothing to wait for
  EXPECT_FALSE(start.recorded());
  start.record(current_stream(Device::cpu()));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop.record(current_stream(Device::cpu()));
  stop.synchronize();
  EXPECT_TRUE(stop.query());
  EXPECT_EQ(stop.device(), Device::cpu());
  const double ms = start.elapsed_ms(stop);
  EXPECT_GE(ms, 15.0);
  EXPECT_LT(ms, 10000.0);
  stop.wait(current_stream(Device::cpu()));  // a no-op on the CPU, but allowed
}

TEST(Stream, EventMisuseIsAClearError) {
  Event plain, timed(true);
  plain.record(current_stream(Device::cpu()));
  timed.record(current_stream(Device::cpu()));
  try {
    plain.elapsed_ms(timed);
    FAIL() << "elapsed_ms without enable_timing ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("enable_timing"), std::string::npos) << e.what();
  }
  Event never(true);
  EXPECT_THROW(timed.elapsed_ms(never), Error);
  EXPECT_THROW(set_current_stream(Stream{Device::cpu(), 3}), Error);
}

TEST(Stream, EventsMoveAndReleaseTheirHandle) {
  Event a(true);
  a.record(current_stream(Device::cpu()));
  Event b = std::move(a);
  EXPECT_TRUE(b.recorded());
  EXPECT_FALSE(a.recorded());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  Event c(true);
  c.record(current_stream(Device::cpu()));
  EXPECT_GE(b.elapsed_ms(c), 0.0);
}

TEST(Stream, CudaGuardQueuesOnASideStreamAndEventsOrderStreams) {
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU (real or emulated) in this build or machine";
  const Device gpu = Device::cuda(0);
  const Stream main = current_stream(gpu);
  const Stream side = new_stream(gpu);
  EXPECT_NE(side, main);
  EXPECT_NE(native_stream(side), native_stream(main));

  Tensor x = arange(0, 1 << 16, 1, TensorOptions(kFloat32).device(gpu));
  Tensor y;
  Event produced;
  {
    StreamGuard on_side(side);
    EXPECT_EQ(current_stream(gpu), side);
    y = x * 2.0 + 1.0;  // queued on `side`
    produced.record(side);
  }
  EXPECT_EQ(current_stream(gpu), main);
  produced.wait(main);  // main waits for y before reading it
  y.record_stream(main);
  const double total = sum(y.to(kFloat64)).item<double>();
  const double n = 1 << 16;
  EXPECT_DOUBLE_EQ(total, 2.0 * (n * (n - 1) / 2) + n);
  produced.synchronize();
  EXPECT_TRUE(produced.query());

  Event start(true), stop(true);
  start.record(gpu);
  Tensor z = matmul(randn({128, 128}, TensorOptions().device(gpu)), randn({128, 128}, TensorOptions().device(gpu)));
  stop.record(gpu);
  stop.synchronize();
  EXPECT_GE(start.elapsed_ms(stop), 0.0);
  synchronize(gpu);
  wait_stream(side, main);
  synchronize(gpu);
  EXPECT_THROW(wait_stream(side, current_stream(Device::cpu())), Error);
}

}  // namespace
}  // namespace anvil
