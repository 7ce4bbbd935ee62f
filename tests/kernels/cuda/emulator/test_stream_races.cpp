// On the emulated GPU every stream has its own worker, so a missing
// stream_wait or record_stream is a real race, and memcheck/initcheck catch
// it deterministically: a stream held back by a StreamBlocker makes the
// wrong order certain. Each broken case has its correct twin, which must
// run clean and give the right numbers. (Only the emulated build compiles
// this folder.)
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/ops.h"
#include "kernels/runtime.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/cuda/emulator/emulator.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/stream_blocker.h"

namespace anvil {
namespace {

cuda::CudaRuntime& backend() { return dynamic_cast<cuda::CudaRuntime&>(runtime_for(DeviceType::CUDA)); }

bool any_finding(const std::vector<emulator::Finding>& found, emulator::Checker c, const std::string& word) {
  for (const auto& f : found)
    if (f.checker == c && f.text.find(word) != std::string::npos) return true;
  return false;
}

std::string all_text(const std::vector<emulator::Finding>& found) {
  std::string s;
  for (const auto& f : found) s += std::string(emulator::checker_name(f.checker)) + ": " + f.text + "\n";
  return s;
}

// Runs `body` with `s` as the current stream of cuda:0.
template <typename F> void on_stream(const Stream& s, F body) {
  const Stream previous = backend().current_stream(0);
  backend().set_current_stream(s);
  body();
  backend().set_current_stream(previous);
}

TEST(EmulatorStreams, MissingRecordStreamIsCaughtByMemcheck) {
  cuda::CudaRuntime& be = backend();
  const Stream side = be.new_stream(0);
  const Tensor host = test::random_tensor({4096}, kFloat32, 3);
  for (bool record : {false, true}) {
    Tensor x = host.cuda();  // allocated on stream 0
    Tensor y;
    {
      test::StreamBlocker block(be.stream(side));
      be.stream_wait(side, be.current_stream(0));
      on_stream(side, [&] { y = x * 2.0; });  // queued behind the blocker
      if (record) x.record_stream(side);
      x = Tensor();  // without record_stream the block is back in stream 0's cache at once
      block.release();
    }
    if (!record) {
      // The launch's error may already have been returned to the blocker's
      // own synchronize; the findings are what this test reads.
      cudaDeviceSynchronize();
      cudaGetLastError();
      const auto found = emulator::take_findings();
      EXPECT_TRUE(any_finding(found, emulator::Checker::Memcheck, "holds this memory but has not handed it out"))
          << all_text(found);
    } else {
      be.synchronize(0);
      const auto found = emulator::take_findings();
      EXPECT_TRUE(found.empty()) << all_text(found);
      EXPECT_CUDA_CLOSE(y, host * 2.0);
    }
  }
}

TEST(EmulatorStreams, MissingStreamWaitIsCaught) {
  cuda::CudaRuntime& be = backend();
  const Stream side = be.new_stream(0);
  const Stream main = be.current_stream(0);
  const Tensor a = test::random_tensor({4096}, kFloat32, 4);
  const Tensor ad = a.cuda();
  for (bool wait : {false, true}) {
    Tensor x, y;
    {
      test::StreamBlocker block(be.stream(main));
      x = ad + 1.0;  // produced on the main stream, behind the blocker
      if (wait) be.stream_wait(side, main);
      on_stream(side, [&] { y = x * 3.0; });  // consumed on the side stream
      // Without the wait the side stream owes nothing to the held one: let it
      // finish before the producer may run, so the wrong order is certain.
      if (!wait) cudaStreamSynchronize(be.stream(side));
      block.release();
    }
    if (!wait) {
      // The launch's error may already have been returned to the blocker's
      // own synchronize; the findings are what this test reads.
      cudaDeviceSynchronize();
      cudaGetLastError();
      const auto found = emulator::take_findings();
      // The side stream read x before the main stream computed it: memcheck
      // flags it when x's block was still cached, and when the block had
      // just held another tensor (freed behind the same blocker, so still
      // "written"), the stale numbers give it away.
      const bool wrong_numbers = !test::all_close(y, (a + 1.0) * 3.0, test::tolerance_for(kFloat32));
      EXPECT_TRUE(!found.empty() || wrong_numbers) << "a read of x before its producer ran went unnoticed";
    } else {
      be.synchronize(0);
      const auto found = emulator::take_findings();
      EXPECT_TRUE(found.empty()) << all_text(found);
      EXPECT_CUDA_CLOSE(y, (a + 1.0) * 3.0);
    }
  }
}

// Like the CUDA runtime, the emulator leaves "not ready" from a query as the
// thread's last error; unless the caller clears it, the next launch check
// reports it as a failed launch (the NCCL group's polling did that).
TEST(EmulatorStreams, NotReadyFromAQueryDoesNotPoisonTheNextLaunch) {
  cuda::CudaRuntime& be = backend();
  const Stream side = be.new_stream(0);
  test::StreamBlocker block(be.stream(side));
  EXPECT_EQ(cudaStreamQuery(be.stream(side)), cudaErrorNotReady);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNotReady);
  cudaEvent_t event = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(event, be.stream(side)), cudaSuccess);
  EXPECT_EQ(cuda::query_without_residue(cudaEventQuery(event)), cudaErrorNotReady);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
  const Tensor x = test::random_tensor({64}, kFloat32, 5);
  EXPECT_CUDA_CLOSE(x.cuda() + 1.0, x + 1.0);  // launches on stream 0, checked
  block.release();
  EXPECT_EQ(cudaEventSynchronize(event), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(event), cudaSuccess);
  cudaEventDestroy(event);
}

}  // namespace
}  // namespace anvil
