#pragma once
// How many blocks a launch gets: the launch-shape vocabulary every kernel of
// the CUDA backend shares (host side; the launch itself is launch.cuh).
//
//   wave_blocks(items, threads, device)   one resident wave on `device`, for
//                                         grid-stride loops over `items`;
//   capped_blocks(items, threads, cap)    one block per `threads` items, at
//                                         most `cap`, for loops that stride
//                                         past the cap.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "kernels/cuda/launch/check.h"

namespace anvil::cuda {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Threads one SM keeps resident at most (every architecture since Volta).
inline constexpr int kResidentThreadsPerSm = 2048;
// The largest gridDim.y and gridDim.z CUDA accepts.
inline constexpr int64_t kMaxGridDimYZ = 65535;
// Default cap of capped_blocks: enough blocks to fill any GPU; a grid-stride
// loop covers work past it.
inline constexpr int64_t kMaxGridStrideBlocks = 65536;
// Cap for kernels that give each row its own block: rows past it loop.
inline constexpr int64_t kMaxRowBlocks = int64_t{1} << 20;

// The device's SM count, queried once per device (a driver call per launch
// showed up in small-op launch overhead).
inline int multiprocessor_count(int device) {
  constexpr int kCachedDevices = 64;
  static std::atomic<int> cached[kCachedDevices] = {};  // 0: not queried yet
  if (device >= 0 && device < kCachedDevices) {
    if (const int sms = cached[device].load(std::memory_order_relaxed)) return sms;
  }
  int sms = 0;
  ANVIL_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (device >= 0 && device < kCachedDevices) cached[device].store(sms, std::memory_order_relaxed);
  return sms;
}

// Blocks of `threads` that fill `device` once (kResidentThreadsPerSm per SM).
inline int64_t resident_blocks(int threads, int device) {
  return static_cast<int64_t>(multiprocessor_count(device)) * (kResidentThreadsPerSm / threads);
}

// Blocks for `items` work items of one thread each on `device`, capped at one
// resident wave; grid-stride loops do the rest.
inline unsigned wave_blocks(int64_t items, int threads, int device) {
  return static_cast<unsigned>(
      std::max<int64_t>(1, std::min(ceil_div(items, threads), resident_blocks(threads, device))));
}

// Blocks for a grid-stride loop over `work_items` with `threads` items per
// block: at least one, never more than the work, never more than max_blocks.
inline unsigned capped_blocks(int64_t work_items, int threads, int64_t max_blocks = kMaxGridStrideBlocks) {
  return static_cast<unsigned>(std::clamp<int64_t>(ceil_div(work_items, threads), 1, max_blocks));
}

}  // namespace anvil::cuda
