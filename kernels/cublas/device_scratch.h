#pragma once
// Temporary device memory for one backend call (workspaces, dense copies of
// operands), taken from the caching allocator for the current stream and
// given back when the call returns. Giving it back before the queued work has
// run is safe: the allocator only hands the block out again for work queued
// later on the same stream (other streams wait for it via record_stream).
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(CudaBackend& backend, int device, size_t nbytes)
      : allocator_(&backend.allocator(device)) {
    if (nbytes > 0) ptr_ = allocator_->allocate(nbytes, backend.current_stream(device).id);
  }
  ~DeviceScratch() { release(); }
  DeviceScratch(DeviceScratch&& o) noexcept : allocator_(o.allocator_), ptr_(o.ptr_) { o.ptr_ = nullptr; }
  DeviceScratch& operator=(DeviceScratch&& o) noexcept {
    if (this != &o) {
      release();
      allocator_ = o.allocator_;
      ptr_ = o.ptr_;
      o.ptr_ = nullptr;
    }
    return *this;
  }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  void* get() const { return ptr_; }

 private:
  void release() {
    if (ptr_) allocator_->deallocate(ptr_);
    ptr_ = nullptr;
  }
  Allocator* allocator_ = nullptr;
  void* ptr_ = nullptr;
};

// A dense (row-major contiguous) view of `shape` in `dtype` backed by scratch.
struct DenseTemp {
  DeviceScratch memory;
  View view;
};

inline DenseTemp make_dense_temp(CudaBackend& backend, int device, DType dtype, const Shape& shape) {
  DenseTemp t;
  View v;
  v.dtype = dtype;
  v.shape = shape;
  v.strides = contiguous_strides(shape);
  v.device_index = device;
  t.memory = DeviceScratch(backend, device, static_cast<size_t>(v.numel()) * itemsize(dtype));
  v.data = t.memory.get();
  t.view = v;
  return t;
}

// `src` copied (and cast) into a dense temp through the backend's strided copy.
inline DenseTemp dense_copy_of(CudaBackend& backend, const View& src, DType dtype) {
  DenseTemp t = make_dense_temp(backend, src.device_index, dtype, src.shape);
  if (src.numel() > 0) backend.copy(t.view, src);
  return t;
}

}  // namespace anvil::cuda
