// The CUDA backend's streams: ids and handles, the per-thread current
// stream, stream_wait ordering across streams, synchronize.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <set>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/ops.h"
#include "kernels/runtime.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/stream_blocker.h"

namespace anvil {
namespace {

cuda::CudaRuntime& backend() { return dynamic_cast<cuda::CudaRuntime&>(runtime_for(DeviceType::CUDA)); }

// Restores the thread's current stream on scope exit, even when a check fails.
class CurrentStreamGuard {
 public:
  explicit CurrentStreamGuard(int device) : saved_(backend().current_stream(device)) {}
  ~CurrentStreamGuard() { backend().set_current_stream(saved_); }

 private:
  Stream saved_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(CudaStreams, DefaultStreamIsIdZeroAndTheLegacyStream) {
  ANVIL_SKIP_WITHOUT_GPU();
  EXPECT_EQ(backend().current_stream(0), (Stream{Device::cuda(0), 0}));
  EXPECT_EQ(backend().stream(Stream{Device::cuda(0), 0}), nullptr);
}

TEST(CudaStreams, NewStreamsAreDistinctRealStreams) {
  ANVIL_SKIP_WITHOUT_GPU();
  std::set<uint64_t> ids;
  std::set<cudaStream_t> handles;
  for (int i = 0; i < 8; ++i) {
    Stream s = backend().new_stream(0);
    EXPECT_EQ(s.device, Device::cuda(0));
    EXPECT_GE(s.id, 1u);
    EXPECT_LE(s.id, 32u);
    ids.insert(s.id);
    cudaStream_t h = backend().stream(s);
    EXPECT_NE(h, nullptr);
    handles.insert(h);
    unsigned int flags = 0;
    ASSERT_EQ(cudaStreamGetFlags(h, &flags), cudaSuccess);
    EXPECT_EQ(flags & cudaStreamNonBlocking, cudaStreamNonBlocking) << "side streams must not wait for stream 0";
  }
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(handles.size(), 8u);
}

TEST(CudaStreams, BadStreamsAndDevicesAreClearErrors) {
  ANVIL_SKIP_WITHOUT_GPU();
  std::string msg = error_of([] { backend().set_current_stream(Stream{Device::cuda(0), 99}); });
  EXPECT_NE(msg.find("stream id 99"), std::string::npos) << msg;
  msg = error_of([] { backend().current_stream(cuda::device_count()); });
  EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
  msg = error_of([] { backend().stream(Stream{Device::cpu(), 0}); });
  EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
}

TEST(CudaStreams, CurrentStreamIsPerThread) {
  ANVIL_SKIP_WITHOUT_GPU();
  CurrentStreamGuard restore(0);
  const Stream mine = backend().new_stream(0);
  backend().set_current_stream(mine);
  EXPECT_EQ(backend().current_stream(0), mine);
  Stream seen_by_other{}, set_by_other{};
  std::thread other([&] {
    seen_by_other = backend().current_stream(0);
    set_by_other = backend().new_stream(0);
    backend().set_current_stream(set_by_other);
  });
  other.join();
  EXPECT_EQ(seen_by_other.id, 0u) << "a new thread starts on the default stream";
  EXPECT_EQ(backend().current_stream(0), mine) << "another thread's set_current_stream must not change ours";
}

TEST(CudaStreams, StreamWaitOrdersWorkAcrossStreams) {
  ANVIL_SKIP_WITHOUT_GPU();
  cuda::CudaRuntime& be = backend();
  CurrentStreamGuard restore(0);
  const Stream producer = be.new_stream(0);
  const Stream consumer = be.new_stream(0);
  ASSERT_NE(producer, consumer);
  const int64_t n = 1 << 18;
  Tensor before = test::random_tensor({n}, kFloat32, 1);
  Tensor produced = test::random_tensor({n}, kFloat32, 2).pin_memory();
  Tensor received = zeros({n}).pin_memory();
  Tensor x = before.to(Device::cuda());  // synchronous, on stream 0
  {
    test::StreamBlocker block(be.stream(producer));
    be.set_current_stream(producer);
    be.copy_from_host(x.data_ptr(), produced.data_ptr(), x.nbytes(), 0, /*non_blocking=*/true);
    be.stream_wait(consumer, producer);
    be.set_current_stream(consumer);
    be.copy_to_host(received.data_ptr(), x.data_ptr(), x.nbytes(), 0, /*non_blocking=*/true);
    EXPECT_TRUE(test::stream_busy(be.stream(consumer))) << "the consumer must wait for the held producer";
    EXPECT_FALSE(block.timed_out());
    block.release();
  }
  be.synchronize(0);
  // Without the wait the consumer would have read x before the producer's
  // copy landed, and received == before.
  EXPECT_EQ(received.to_vector<float>(), produced.to_vector<float>());
}

TEST(CudaStreams, StreamWaitOnItselfIsANoOp) {
  ANVIL_SKIP_WITHOUT_GPU();
  const Stream s = backend().new_stream(0);
  EXPECT_NO_THROW(backend().stream_wait(s, s));
  EXPECT_NO_THROW(backend().stream_wait(Stream{Device::cuda(0), 0}, s));
  EXPECT_NO_THROW(backend().stream_wait(s, Stream{Device::cuda(0), 0}));
  backend().synchronize(0);
}

TEST(CudaStreams, SynchronizeWaitsForEveryStream) {
  ANVIL_SKIP_WITHOUT_GPU();
  cuda::CudaRuntime& be = backend();
  const Stream s = be.new_stream(0);
  {
    test::StreamBlocker block(be.stream(s));
    EXPECT_TRUE(test::stream_busy(be.stream(s)));
    block.release();
    be.synchronize(0);
    EXPECT_FALSE(test::stream_busy(be.stream(s)));
  }
}

TEST(CudaStreams, TensorCopiesRunOnTheCurrentStream) {
  ANVIL_SKIP_WITHOUT_GPU();
  cuda::CudaRuntime& be = backend();
  CurrentStreamGuard restore(0);
  const Stream side = be.new_stream(0);
  be.set_current_stream(side);
  Tensor t = test::random_tensor({1000, 7}, kFloat32, 5);
  Tensor pinned = t.pin_memory();
  Tensor d = pinned.to(Device::cuda(), /*non_blocking=*/true);
  // Reading back on the same stream is ordered after the upload.
  EXPECT_EQ(d.cpu().to_vector<float>(), t.to_vector<float>());
}

}  // namespace
}  // namespace anvil
