#pragma once
/// @file
/// Storage: the block of memory a tensor and its views share, with the version counter autograd checks.
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

#include "core/base/allocator.h"
#include "core/base/device.h"

namespace anvil {

/// A block of device memory shared by a tensor and all its views. The version
/// counter lives here so that an in-place change through any view is seen by
/// autograd's saved-tensor checks.
struct Storage {
  void* data = nullptr;  ///< the first byte (a device pointer for device memory)
  size_t nbytes = 0;  ///< the size in bytes
  Device device;  ///< where the memory lives
  std::function<void(void*)> release;  ///< gives the memory back (empty: not ours)
  std::atomic<uint64_t> version{0};  ///< bumped by every in-place write through any view; autograd checks it
  /// Page-locked host memory (Tensor::pin_memory): copies to a GPU from it can
  /// be asynchronous.
  bool pinned = false;

  /// Wraps memory `d` of `n` bytes on `dev`; `r` gives it back (empty: the caller owns it).
  Storage(void* d, size_t n, Device dev, std::function<void(void*)> r)
      : data(d), nbytes(n), device(dev), release(std::move(r)) {}
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (release && data) release(data);
  }

  /// New memory from the device's allocator, on the device's current stream.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
};

}  // namespace anvil
