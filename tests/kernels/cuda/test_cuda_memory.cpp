// The CUDA backend's memory: the caching allocator on cudaMalloc (reuse,
// splitting, stats, empty_cache, out of memory), record_stream, pinned host
// memory and host<->device copies. Deltas of the allocator's counters are
// compared, never absolute values: other tests of this process share cuda:0's
// allocator. These tests use no kernel: only the runtime of memory.cpp.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "core/ops.h"
#include "kernels/runtime.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/cuda/runtime/pinned_host_allocator.h"
#include "tests/kernels/cuda/cuda_test_util.h"
#include "tests/kernels/cuda/stream_blocker.h"

namespace anvil {
namespace {

cuda::CudaRuntime& backend() { return dynamic_cast<cuda::CudaRuntime&>(runtime_for(DeviceType::CUDA)); }
Allocator& device_allocator() { return backend().allocator(0); }

// Sizes nobody else asks for, so the cache holds no block of exactly that size.
constexpr size_t kOddLarge = (size_t{3} << 20) + 7 * 512 + 100;  // large pool, medium segment

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

TEST(CudaMemory, BackendIsRegisteredWithEveryDevice) {
  ANVIL_SKIP_WITHOUT_GPU();
  EXPECT_EQ(runtime_for(DeviceType::CUDA).type(), DeviceType::CUDA);
  EXPECT_EQ(backend().device_count(), cuda::device_count());
  EXPECT_NE(backend().pinned_host_allocator(), nullptr);
}

TEST(CudaMemory, FreedBlockIsReusedWithoutADeviceMalloc) {
  ANVIL_SKIP_WITHOUT_GPU();
  Allocator& a = device_allocator();
  a.empty_cache();  // no other free block of a competing size
  void* p = a.allocate(kOddLarge);
  a.deallocate(p);
  MemoryStats before = a.stats();
  void* q = a.allocate(kOddLarge);
  MemoryStats after = a.stats();
  EXPECT_EQ(after.device_mallocs, before.device_mallocs)
      << "second allocation of the same size must be served from the cache";
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
  EXPECT_EQ(q, p) << "best fit on the same stream should find the block just freed";
  a.deallocate(q);
}

TEST(CudaMemory, TensorsOfTheSameSizeReuseMemory) {
  ANVIL_SKIP_WITHOUT_GPU();
  { Tensor warm = empty({1000, 333}, Device::cuda()); }
  MemoryStats before = memory_stats(Device::cuda());
  for (int i = 0; i < 5; ++i) Tensor t = empty({1000, 333}, Device::cuda());
  MemoryStats after = memory_stats(Device::cuda());
  EXPECT_EQ(after.device_mallocs, before.device_mallocs);
  EXPECT_EQ(after.num_allocs, before.num_allocs + 5);
  EXPECT_EQ(after.cache_hits, before.cache_hits + 5);
}

TEST(CudaMemory, SegmentsAreSplitAndCoalesced) {
  ANVIL_SKIP_WITHOUT_GPU();
  Allocator& a = device_allocator();
  a.empty_cache();
  MemoryStats s0 = a.stats();
  // The first request gets a 20 MiB segment; the second is cut from its rest.
  void* p = a.allocate(kOddLarge);
  void* q = a.allocate(kOddLarge);
  MemoryStats s1 = a.stats();
  EXPECT_EQ(s1.device_mallocs, s0.device_mallocs + 1) << "both requests fit one medium segment";
  EXPECT_EQ(s1.reserved_bytes, s0.reserved_bytes + (int64_t{20} << 20));
  const size_t rounded = (kOddLarge + 511) / 512 * 512;
  EXPECT_EQ(static_cast<char*>(q), static_cast<char*>(p) + rounded) << "the second block follows the first";
  EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes + 2 * static_cast<int64_t>(rounded));
  a.deallocate(p);
  a.deallocate(q);
  // Freed blocks merge back into one whole segment, which empty_cache can return.
  a.empty_cache();
  MemoryStats s2 = a.stats();
  EXPECT_EQ(s2.reserved_bytes, s0.reserved_bytes);
  EXPECT_EQ(s2.device_frees, s1.device_frees + 1);
}

TEST(CudaMemory, StatsFollowAllocationsAndPeaks) {
  ANVIL_SKIP_WITHOUT_GPU();
  Allocator& a = device_allocator();
  a.reset_peak_stats();
  MemoryStats s0 = a.stats();
  EXPECT_EQ(s0.peak_allocated_bytes, s0.allocated_bytes);
  void* p = a.allocate(size_t{8} << 20);
  MemoryStats s1 = a.stats();
  EXPECT_EQ(s1.allocated_bytes, s0.allocated_bytes + (int64_t{8} << 20));
  EXPECT_GE(s1.reserved_bytes, s1.allocated_bytes);
  EXPECT_EQ(s1.num_allocs, s0.num_allocs + 1);
  a.deallocate(p);
  MemoryStats s2 = a.stats();
  EXPECT_EQ(s2.allocated_bytes, s0.allocated_bytes);
  EXPECT_EQ(s2.peak_allocated_bytes, s1.allocated_bytes) << "the peak remembers the high point";
  EXPECT_EQ(s2.num_frees, s0.num_frees + 1);
}

TEST(CudaMemory, EmptyCacheGivesCachedMemoryBack) {
  ANVIL_SKIP_WITHOUT_GPU();
  empty_cache(Device::cuda());
  const int64_t base = memory_stats(Device::cuda()).reserved_bytes;
  {
    std::vector<Tensor> held;
    for (int64_t n : {100, 10'000, 1'000'000, 30'000'000}) held.push_back(empty({n}, Device::cuda()));
    EXPECT_GT(memory_stats(Device::cuda()).reserved_bytes, base);
  }
  EXPECT_GT(memory_stats(Device::cuda()).reserved_bytes, base) << "freed tensors stay cached";
  empty_cache(Device::cuda());
  EXPECT_EQ(memory_stats(Device::cuda()).reserved_bytes, base);
}

TEST(CudaMemory, OutOfMemoryIsAClearErrorAndTheAllocatorRecovers) {
  ANVIL_SKIP_WITHOUT_GPU();
  Allocator& a = device_allocator();
  const size_t total = cuda::device_properties(0).total_memory;
  const size_t request = total + total / 2;
  const int64_t ooms = a.stats().num_ooms;
  try {
    a.allocate(request);
    FAIL() << "allocating more than the device holds must fail";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(request)), std::string::npos) << "names the requested size: " << msg;
    EXPECT_NE(msg.find("cuda:0"), std::string::npos) << "names the device: " << msg;
    EXPECT_NE(msg.find("GiB free of"), std::string::npos) << "says the device's free/total memory: " << msg;
    EXPECT_NE(msg.find("reserved"), std::string::npos) << "gives the allocator's stats: " << msg;
  }
  EXPECT_GT(a.stats().num_ooms, ooms);
  EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess) << "the failed cudaMalloc must not leave a pending error";
  // The same through a tensor factory, then business as usual.
  EXPECT_THROW(empty({static_cast<int64_t>(request / 4)}, Device::cuda()), Error);
  Tensor ok = empty({1 << 20}, Device::cuda());
  std::vector<float> host(1 << 20, 2.5f);
  backend().copy_from_host(ok.data_ptr(), host.data(), ok.nbytes(), 0, false);
  std::vector<float> back(host.size());
  backend().copy_to_host(back.data(), ok.data_ptr(), ok.nbytes(), 0, false);
  EXPECT_EQ(back, host);
}

TEST(CudaMemory, PageableRoundTripsKeepEveryByte) {
  ANVIL_SKIP_WITHOUT_GPU();
  for (size_t n : {size_t{1}, size_t{511}, size_t{4096}, size_t{3} << 20}) {
    std::vector<uint8_t> src = random_bytes(n, static_cast<uint32_t>(n));
    void* d = device_allocator().allocate(n);
    backend().copy_from_host(d, src.data(), n, 0, /*non_blocking=*/false);
    std::vector<uint8_t> back(n, 0);
    // non_blocking on pageable memory must still complete before returning.
    backend().copy_to_host(back.data(), d, n, 0, /*non_blocking=*/true);
    EXPECT_EQ(back, src) << n << " bytes";
    device_allocator().deallocate(d);
  }
}

TEST(CudaMemory, TensorRoundTripsForEveryDtype) {
  ANVIL_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUInt8, kBool}) {
    Tensor t = test::random_tensor({37, 3}, dt, seed++);
    Tensor d = t.to(Device::cuda());
    EXPECT_EQ(d.device(), Device::cuda());
    EXPECT_EQ(d.dtype(), dt);
    EXPECT_CUDA_CLOSE(d.cpu(), t, test::Tolerance{0, 0});
  }
}

TEST(CudaMemory, PinnedRoundTripAndNonBlockingCopy) {
  ANVIL_SKIP_WITHOUT_GPU();
  Tensor t = test::random_tensor({256, 129}, kFloat32, 7);
  Tensor p = t.pin_memory();
  ASSERT_TRUE(p.is_pinned());
  Tensor d = p.to(Device::cuda(), /*non_blocking=*/true);
  Tensor back = empty({256, 129}).pin_memory();
  backend().copy_to_host(back.data_ptr(), d.data_ptr(), d.nbytes(), 0, /*non_blocking=*/true);
  backend().synchronize(0);  // a non-blocking copy to the host is read only after a sync
  EXPECT_EQ(back.to_vector<float>(), t.to_vector<float>());
}

TEST(CudaMemory, NonBlockingCopyFromPinnedMemoryReturnsBeforeTheCopyRuns) {
  ANVIL_SKIP_WITHOUT_GPU();
  cuda::CudaRuntime& be = backend();
  const Stream side = be.new_stream(0);
  const Stream previous = be.current_stream(0);
  be.set_current_stream(side);
  const size_t n = size_t{1} << 20;
  std::vector<uint8_t> src = random_bytes(n, 3);
  Tensor pinned_src = from_vector(src, {static_cast<int64_t>(n)}).pin_memory();
  void* d = device_allocator().allocate(n, side.id);
  {
    test::StreamBlocker block(be.stream(side));
    be.copy_from_host(d, pinned_src.data_ptr(), n, 0, /*non_blocking=*/true);
    EXPECT_TRUE(test::stream_busy(be.stream(side))) << "the copy is queued behind the blocker";
    EXPECT_FALSE(block.timed_out()) << "copy_from_host waited for the stream";
    block.release();
  }
  be.synchronize(0);
  std::vector<uint8_t> back(n);
  be.copy_to_host(back.data(), d, n, 0, false);
  EXPECT_EQ(back, src);
  be.set_current_stream(previous);
  device_allocator().deallocate(d);
}

TEST(CudaMemory, PinnedBlockIsNotReusedWhileACopyReadsIt) {
  ANVIL_SKIP_WITHOUT_GPU();
  cuda::CudaRuntime& be = backend();
  auto* pinned = dynamic_cast<cuda::PinnedHostAllocator*>(be.pinned_host_allocator());
  ASSERT_NE(pinned, nullptr);
  const Stream side = be.new_stream(0);
  const Stream previous = be.current_stream(0);
  be.set_current_stream(side);
  const size_t n = (size_t{5} << 20) + 4096;  // an unusual bucket (8 MiB)
  std::vector<uint8_t> src = random_bytes(n, 11);
  void* d = device_allocator().allocate(n, side.id);
  // Two blocks of the bucket, made before the stream is held (cudaHostAlloc
  // may synchronize): `spare` waits in the free list.
  void* h = pinned->allocate(n);
  void* spare = pinned->allocate(n);
  pinned->deallocate(spare);
  std::memcpy(h, src.data(), n);
  {
    test::StreamBlocker block(be.stream(side));
    be.copy_from_host(d, h, n, 0, /*non_blocking=*/true);
    pinned->deallocate(h);  // freed while the copy has not run yet
    void* h2 = pinned->allocate(n);
    EXPECT_EQ(h2, spare) << "a pinned block still read by a queued copy was handed out again";
    if (h2 != h) std::memset(h2, 0xAB, n);
    pinned->deallocate(h2);
    EXPECT_FALSE(block.timed_out());
    block.release();
  }
  be.synchronize(0);
  std::vector<uint8_t> back(n);
  be.copy_to_host(back.data(), d, n, 0, false);
  EXPECT_EQ(back, src) << "the copy read the original bytes";
  // Once the copy finished, the block is reusable: no new cudaHostAlloc.
  const int64_t mallocs = pinned->stats().device_mallocs;
  void* h3 = pinned->allocate(n);
  EXPECT_EQ(pinned->stats().device_mallocs, mallocs);
  pinned->deallocate(h3);
  be.set_current_stream(previous);
  device_allocator().deallocate(d);
}

TEST(CudaMemory, RecordStreamKeepsABlockUntilTheOtherStreamIsDone) {
  ANVIL_SKIP_WITHOUT_GPU();
  cuda::CudaRuntime& be = backend();
  const Stream side = be.new_stream(0);
  // A clean cache: the one segment made below is the only free memory, so
  // nothing here needs cudaMalloc while the side stream is held.
  empty_cache(Device::cuda());
  // Control: without record_stream the freed block comes straight back.
  {
    Tensor x = empty({static_cast<int64_t>(kOddLarge / 4)}, Device::cuda());
    void* ptr = x.data_ptr();
    x = Tensor();
    Tensor y = empty({static_cast<int64_t>(kOddLarge / 4)}, Device::cuda());
    EXPECT_EQ(y.data_ptr(), ptr);
  }
  void* old = nullptr;
  {
    test::StreamBlocker block(be.stream(side));
    {
      Tensor x = empty({static_cast<int64_t>(kOddLarge / 4)}, Device::cuda());  // on stream 0
      old = x.data_ptr();
      x.record_stream(side);  // "the side stream uses x": its queued work is behind the blocker
    }
    Tensor y = empty({static_cast<int64_t>(kOddLarge / 4)}, Device::cuda());
    EXPECT_NE(y.data_ptr(), old) << "a block still used by another stream was reused";
    EXPECT_FALSE(block.timed_out());
    block.release();
  }
  be.synchronize(0);
  // Now the event has completed: the block is free again (found on the next allocation).
  const MemoryStats before = memory_stats(Device::cuda());
  Tensor z = empty({static_cast<int64_t>(kOddLarge / 4)}, Device::cuda());
  const MemoryStats after = memory_stats(Device::cuda());
  EXPECT_EQ(after.device_mallocs, before.device_mallocs);
}

TEST(CudaMemory, ConcurrentAllocationsFromManyThreads) {
  ANVIL_SKIP_WITHOUT_GPU();
  Allocator& a = device_allocator();
  const int64_t allocated = a.stats().allocated_bytes;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&a, t] {
      std::vector<void*> held;
      for (int i = 0; i < 200; ++i) {
        held.push_back(a.allocate(static_cast<size_t>(512 * (1 + (i * 7 + t) % 50))));
        if (i % 3 == 2) {
          a.deallocate(held.front());
          held.erase(held.begin());
        }
      }
      for (void* p : held) a.deallocate(p);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(a.stats().allocated_bytes, allocated);
}

}  // namespace
}  // namespace anvil
