// The emulated NCCL (kernels/cuda/emulator/nccl) through its C API, ranks as
// threads of this process (each with its own communicator and stream, over
// the same unix-socket transport separate processes use): every collective
// against hand-computed values, NCCL's blocking semantics (the ungrouped
// send/send deadlock reported by the watchdog, the same exchange grouped),
// abort, mismatched calls and memcheck on a freed buffer. The NCCL process
// group on real processes: tests/distributed/process_group/nccl/test_nccl_processes.cpp.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/base/half.h"
#include "kernels/cuda/emulator/emulator.h"
#include "kernels/cuda/emulator/include/nccl.h"

namespace anvil {
namespace {

// Sets ANVIL_EMU_NCCL_TIMEOUT for one test (read at each call).
struct TimeoutGuard {
  explicit TimeoutGuard(const char* seconds) { setenv("ANVIL_EMU_NCCL_TIMEOUT", seconds, 1); }
  ~TimeoutGuard() { unsetenv("ANVIL_EMU_NCCL_TIMEOUT"); }
};

// One rank: a thread with its communicator and a non-blocking stream. Two
// ranks may share an emulated device (rank % 2), so nothing here may wait for
// the whole device (the legacy stream, cudaFree): the other rank's stream may
// be waiting for this one. Buffers are freed after every rank is done.
struct Rank {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  std::vector<void*> buffers;

  template <typename T> T* to_device(const std::vector<T>& v) {
    void* p = nullptr;
    cudaMalloc(&p, v.size() * sizeof(T));
    cudaMemcpyAsync(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, stream);
    buffers.push_back(p);
    return static_cast<T*>(p);
  }
  template <typename T> std::vector<T> to_host(const T* p, size_t n) {
    std::vector<T> v(n);
    cudaMemcpyAsync(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost, stream);  // pageable: returns when done
    return v;
  }
};

// Runs body(rank) on n threads, each with a communicator of one id, on
// cuda:(rank % 2), then destroys them.
void run_ranks(int n, const std::function<void(Rank&)>& body) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<Rank> ranks(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      Rank& me = ranks[static_cast<size_t>(r)];
      me.rank = r;
      cudaSetDevice(r % 2);
      ASSERT_EQ(ncclCommInitRank(&me.comm, n, id, r), ncclSuccess) << ncclGetLastError(nullptr);
      cudaStreamCreateWithFlags(&me.stream, cudaStreamNonBlocking);
      body(me);
      cudaStreamSynchronize(me.stream);
    });
  for (auto& t : threads) t.join();
  for (Rank& me : ranks) {
    if (me.stream) cudaStreamDestroy(me.stream);
    if (me.comm) ncclCommDestroy(me.comm);
    for (void* p : me.buffers) cudaFree(p);
  }
}

double value(int rank, size_t i) { return static_cast<double>((rank + 1) * 10 + static_cast<int>(i % 7)); }

class EmulatedNccl : public ::testing::TestWithParam<int> {};

TEST_P(EmulatedNccl, EveryCollectiveMatchesHandComputedValues) {
  const int n = GetParam();
  const size_t count = 37;
  run_ranks(n, [&](Rank& me) {
    std::vector<float> mine(count);
    for (size_t i = 0; i < count; ++i) mine[i] = static_cast<float>(value(me.rank, i));
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
      float* d = me.to_device(mine);
      ASSERT_EQ(ncclAllReduce(d, d, count, ncclFloat32, op, me.comm, me.stream), ncclSuccess);
      std::vector<float> got = me.to_host(d, count);
      for (size_t i = 0; i < count; ++i) {
        float want = static_cast<float>(value(0, i));
        for (int r = 1; r < n; ++r) {
          const auto v = static_cast<float>(value(r, i));
          if (op == ncclSum || op == ncclAvg) want += v;
          if (op == ncclProd) want *= v;
          if (op == ncclMax) want = std::max(want, v);
          if (op == ncclMin) want = std::min(want, v);
        }
        if (op == ncclAvg) want /= static_cast<float>(n);
        ASSERT_EQ(got[i], want) << "op " << op << " element " << i << " rank " << me.rank;
      }
    }
    // bfloat16 and int64 sums (rank order, rounded each step).
    {
      std::vector<BFloat16> b(count);
      std::vector<int64_t> l(count);
      for (size_t i = 0; i < count; ++i) {
        b[i] = BFloat16(static_cast<float>(value(me.rank, i)));
        l[i] = static_cast<int64_t>(value(me.rank, i)) << 33;
      }
      BFloat16* db = me.to_device(b);
      int64_t* dl = me.to_device(l);
      ASSERT_EQ(ncclAllReduce(db, db, count, ncclBfloat16, ncclSum, me.comm, me.stream), ncclSuccess);
      ASSERT_EQ(ncclAllReduce(dl, dl, count, ncclInt64, ncclSum, me.comm, me.stream), ncclSuccess);
      auto gb = me.to_host(db, count);
      auto gl = me.to_host(dl, count);
      for (size_t i = 0; i < count; ++i) {
        BFloat16 want(static_cast<float>(value(0, i)));
        int64_t want_l = 0;
        for (int r = 0; r < n; ++r) want_l += static_cast<int64_t>(value(r, i)) << 33;
        for (int r = 1; r < n; ++r) want = BFloat16(static_cast<float>(want) + static_cast<float>(value(r, i)));
        ASSERT_EQ(gb[i].bits, want.bits);
        ASSERT_EQ(gl[i], want_l);
      }
    }
    // broadcast from every root, all_gather, reduce_scatter.
    for (int root = 0; root < n; ++root) {
      int32_t* d = me.to_device(std::vector<int32_t>(count, me.rank * 100 + root));
      ASSERT_EQ(ncclBroadcast(d, d, count, ncclInt32, root, me.comm, me.stream), ncclSuccess);
      for (int32_t v : me.to_host(d, count)) ASSERT_EQ(v, root * 100 + root);
    }
    {
      double* in = me.to_device(std::vector<double>(count, me.rank + 0.5));
      double* out = me.to_device(std::vector<double>(count * static_cast<size_t>(n), -1.0));
      ASSERT_EQ(ncclAllGather(in, out, count, ncclFloat64, me.comm, me.stream), ncclSuccess);
      auto got = me.to_host(out, count * static_cast<size_t>(n));
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<double>(i / count) + 0.5);
    }
    {
      std::vector<uint8_t> in(count * static_cast<size_t>(n));
      for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(me.rank + i % 5);
      uint8_t* din = me.to_device(in);
      uint8_t* dout = me.to_device(std::vector<uint8_t>(count, 0));
      ASSERT_EQ(ncclReduceScatter(din, dout, count, ncclUint8, ncclMax, me.comm, me.stream), ncclSuccess);
      auto got = me.to_host(dout, count);
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[i], static_cast<uint8_t>(n - 1 + (me.rank * count + i) % 5));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, EmulatedNccl, ::testing::Values(1, 2, 3));

// Both ranks send first, outside a group: each send holds its stream until
// the peer's recv runs, which never comes. The watchdog names it.
TEST(EmulatedNcclSemantics, UngroupedSendsFirstOnBothRanksAreReportedAsADeadlock) {
  TimeoutGuard timeout("0.5");
  std::vector<std::string> errors(2);
  run_ranks(2, [&](Rank& me) {
    float* out = me.to_device(std::vector<float>(8, 1.0f));
    float* in = me.to_device(std::vector<float>(8, 0.0f));
    const int peer = 1 - me.rank;
    ASSERT_EQ(ncclSend(out, 8, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclRecv(in, 8, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
    cudaStreamSynchronize(me.stream);  // returns: the watchdog failed the send
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(me.comm, &async);
    EXPECT_NE(async, ncclSuccess);
    errors[static_cast<size_t>(me.rank)] = ncclGetLastError(me.comm);
    // Later calls fail at once with that error.
    EXPECT_NE(ncclSend(out, 8, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
  });
  // Each rank's message names itself, the op, the peer and the cause (the
  // slower rank may instead see the faster one close its connection).
  bool deadlock_named = false;
  for (int r = 0; r < 2; ++r) {
    const std::string& e = errors[static_cast<size_t>(r)];
    EXPECT_NE(e.find("rank " + std::to_string(r) + " of 2"), std::string::npos) << e;
    EXPECT_NE(e.find("ncclSend of 8 float32 to rank " + std::to_string(1 - r)), std::string::npos) << e;
    deadlock_named = deadlock_named || e.find("looks like a deadlock of ungrouped send/recv") != std::string::npos;
  }
  EXPECT_TRUE(deadlock_named) << errors[0] << "\n" << errors[1];
}

TEST(EmulatedNcclSemantics, TheSameExchangeGroupedCompletes) {
  TimeoutGuard timeout("5");
  run_ranks(2, [&](Rank& me) {
    const int peer = 1 - me.rank;
    float* out = me.to_device(std::vector<float>(8, static_cast<float>(me.rank + 1)));
    float* in = me.to_device(std::vector<float>(8, 0.0f));
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);  // nested: only the outermost End submits
    ASSERT_EQ(ncclSend(out, 8, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    ASSERT_EQ(ncclRecv(in, 8, ncclFloat32, peer, me.comm, me.stream), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    for (float v : me.to_host(in, 8)) EXPECT_EQ(v, static_cast<float>(peer + 1));
    ncclResult_t async = ncclInternalError;
    ncclCommGetAsyncError(me.comm, &async);
    EXPECT_EQ(async, ncclSuccess) << ncclGetLastError(me.comm);
  });
}

TEST(EmulatedNcclSemantics, MismatchedCountsAreNamed) {
  TimeoutGuard timeout("5");
  std::string error;
  run_ranks(2, [&](Rank& me) {
    float* buf = me.to_device(std::vector<float>(5, 1.0f));
    if (me.rank == 0) {
      ASSERT_EQ(ncclSend(buf, 4, ncclFloat32, 1, me.comm, me.stream), ncclSuccess);
    } else {
      ASSERT_EQ(ncclRecv(buf, 5, ncclFloat32, 0, me.comm, me.stream), ncclSuccess);
      cudaStreamSynchronize(me.stream);
      error = ncclGetLastError(me.comm);
    }
    cudaStreamSynchronize(me.stream);
  });
  EXPECT_NE(error.find("expected 20 bytes of rank 0's ncclSend but got 16 bytes"), std::string::npos) << error;
}

TEST(EmulatedNcclSemantics, AbortWakesARecvThatWaitsForever) {
  TimeoutGuard timeout("60");
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comms[2] = {nullptr, nullptr};
  std::thread other([&] { ASSERT_EQ(ncclCommInitRank(&comms[1], 2, id, 1), ncclSuccess); });
  ASSERT_EQ(ncclCommInitRank(&comms[0], 2, id, 0), ncclSuccess);
  other.join();
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  void* in = nullptr;
  cudaMalloc(&in, 4 * sizeof(float));
  ASSERT_EQ(ncclRecv(in, 4, ncclFloat32, 1, comms[0], s), ncclSuccess);  // rank 1 never sends
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
  cudaStreamSynchronize(s);  // would wait the full 60 s without the abort
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  cudaStreamDestroy(s);
  cudaFree(in);
  ncclCommDestroy(comms[1]);
}

TEST(EmulatedNcclSemantics, AFreedBufferIsAMemcheckFinding) {
  emulator::take_findings();
  run_ranks(1, [&](Rank& me) {
    float* d = me.to_device(std::vector<float>(16, 1.0f));
    cudaStreamSynchronize(me.stream);
    cudaFree(d);  // alone on its device here: cudaFree may wait for the device
    me.buffers.clear();
    ASSERT_EQ(ncclAllReduce(d, d, 16, ncclFloat32, ncclSum, me.comm, me.stream), ncclSuccess);
    EXPECT_NE(cudaStreamSynchronize(me.stream), cudaSuccess);
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(me.comm, &async);
    EXPECT_EQ(async, ncclUnhandledCudaError);
  });
  const auto found = emulator::take_findings();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].checker, emulator::Checker::Memcheck);
  EXPECT_NE(found[0].text.find("ncclAllReduce of 16 float32 (send buffer) of 64 bytes touches"), std::string::npos)
      << found[0].text;
}

TEST(EmulatedNcclSemantics, BadArgumentsAreRefusedAtTheCall) {
  run_ranks(2, [&](Rank& me) {
    float* d = me.to_device(std::vector<float>(4, 1.0f));
    std::vector<float> host(4);
    EXPECT_EQ(ncclSend(d, 4, ncclFloat32, me.rank, me.comm, me.stream), ncclInvalidArgument);  // to itself
    EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("is not another rank"), std::string::npos);
    EXPECT_EQ(ncclAllReduce(host.data(), host.data(), 4, ncclFloat32, ncclSum, me.comm, me.stream),
              ncclInvalidArgument);  // host memory
    EXPECT_EQ(ncclBroadcast(d, d, 4, ncclFloat32, 7, me.comm, me.stream), ncclInvalidArgument);
    EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  });
}

}  // namespace
}  // namespace anvil
