#pragma once
// Temporary device memory for one backend call, and dense stand-ins for
// views: the CUDA counterpart of kernels/cpu/scratch.h and dense_buffer.h,
// used by the hand-written kernels and the cuBLAS and cuDNN wrappers alike.
//
// Scratch comes from the device's caching allocator on the current stream and
// goes back when the call returns, before the queued work has run. That is
// safe: the allocator only hands the block out again to work queued later on
// the same stream (other streams wait for it through record_stream).
//
// Kernels and libraries handle the common layout (contiguous, expected dtype)
// directly; a DenseArg gathers any other layout into scratch with the
// backend's strided, casting copy and, for outputs, scatters it back.
#include <cstddef>
#include <utility>

#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/view.h"

namespace anvil::cuda {

class Scratch {
 public:
  Scratch() = default;
  Scratch(CudaRuntime& backend, int device, size_t nbytes) : allocator_(&backend.allocator(device)) {
    if (nbytes > 0) ptr_ = allocator_->allocate(nbytes, backend.current_stream(device).id);
  }
  Scratch(Scratch&& o) noexcept : allocator_(o.allocator_), ptr_(std::exchange(o.ptr_, nullptr)) {}
  Scratch& operator=(Scratch&& o) noexcept {
    if (this != &o) {
      release();
      allocator_ = o.allocator_;
      ptr_ = std::exchange(o.ptr_, nullptr);
    }
    return *this;
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { release(); }

  void* get() const { return ptr_; }
  template <typename T> T* as() const { return static_cast<T*>(ptr_); }

 private:
  void release() {
    if (ptr_) allocator_->deallocate(ptr_);
    ptr_ = nullptr;
  }
  Allocator* allocator_ = nullptr;
  void* ptr_ = nullptr;
};

// A dense (row-major contiguous) tensor in scratch memory.
struct DenseBuffer {
  Scratch memory;
  View view;
};

// Uninitialised.
inline DenseBuffer dense_buffer(CudaRuntime& backend, int device, DType dtype, const Shape& shape) {
  DenseBuffer t;
  t.view.dtype = dtype;
  t.view.shape = shape;
  t.view.strides = contiguous_strides(shape);
  t.view.device_index = device;
  t.memory = Scratch(backend, device, static_cast<size_t>(t.view.numel()) * itemsize(dtype));
  t.view.data = t.memory.get();
  return t;
}

// `src` copied (and cast to `dtype`) through the backend's strided copy.
inline DenseBuffer dense_copy(CudaRuntime& backend, const View& src, DType dtype) {
  DenseBuffer t = dense_buffer(backend, src.device_index, dtype, src.shape);
  if (src.numel() > 0) backend.copy(t.view, src);
  return t;
}

// A contiguous view of `v` in dtype `want`: `v` itself when it already is
// one, else a scratch copy (filled on construction unless the mode is Out).
// For Out and InOut call commit() after the work is queued to copy the result
// back into `v`.
class DenseArg {
 public:
  enum Mode { In, Out, InOut };
  DenseArg(CudaRuntime& backend, const View& v, DType want, Mode mode)
      : backend_(&backend), orig_(v), dense_(v), mode_(mode) {
    if (v.is_contiguous() && v.dtype == want) return;
    buffer_ = mode == Out ? dense_buffer(backend, v.device_index, want, v.shape) : dense_copy(backend, v, want);
    dense_ = buffer_.view;
  }
  // An output (or in-out) in its own dtype.
  DenseArg(CudaRuntime& backend, const View& v, Mode mode) : DenseArg(backend, v, v.dtype, mode) {}

  const View& view() const { return dense_; }
  void* data() const { return dense_.data; }
  template <typename T> T* ptr() const { return static_cast<T*>(dense_.data); }
  bool is_copy() const { return buffer_.view.data != nullptr; }
  void commit() {
    if (is_copy() && mode_ != In && orig_.numel() > 0) backend_->copy(orig_, dense_);
  }

 private:
  CudaRuntime* backend_;
  View orig_, dense_;
  Mode mode_;
  DenseBuffer buffer_;
};

}  // namespace anvil::cuda
