#pragma once
// Host-side helpers shared by the nn kernels (softmax, layer_norm,
// cross_entropy, random, indexing, optim): scratch memory from the device's
// caching allocator and dense (contiguous, one dtype) stand-ins for views,
// the CUDA counterpart of kernels/cpu/dense_buffer.h.
//
// The kernels handle the common layout (contiguous, expected dtype) directly;
// any other layout is gathered into scratch with the backend's own strided,
// casting copy and scattered back after the kernel. Scratch is allocated on
// the current stream and freed right after the work is queued: the caching
// allocator only hands it out again to work queued later on the same stream,
// which runs after ours.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <utility>

#include "core/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

class Scratch {
 public:
  Scratch() = default;
  Scratch(CudaBackend& b, int device, size_t nbytes) : alloc_(&b.allocator(device)) {
    if (nbytes > 0) ptr_ = alloc_->allocate(nbytes, b.current_stream(device).id);
  }
  Scratch(Scratch&& o) noexcept : alloc_(o.alloc_), ptr_(std::exchange(o.ptr_, nullptr)) {}
  Scratch& operator=(Scratch&& o) noexcept {
    if (this != &o) {
      release();
      alloc_ = o.alloc_;
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
    if (ptr_) alloc_->deallocate(ptr_);
    ptr_ = nullptr;
  }
  Allocator* alloc_ = nullptr;
  void* ptr_ = nullptr;
};

// A contiguous view of `v` in dtype `want`: `v` itself when it already is one,
// else a scratch copy (made on construction for inputs). For outputs call
// commit() after the kernel to copy the result back into `v`.
class DenseArg {
 public:
  enum Mode { In, Out, InOut };
  DenseArg(CudaBackend& b, const View& v, DType want, Mode mode) : b_(&b), orig_(v), mode_(mode) {
    dense_ = v;
    if (v.is_contiguous() && v.dtype == want) return;
    dense_.dtype = want;
    dense_.strides = contiguous_strides(v.shape);
    scratch_ = Scratch(b, v.device_index, static_cast<size_t>(v.numel()) * itemsize(want));
    dense_.data = scratch_.get();
    copied_ = true;
    if (mode != Out && v.numel() > 0) b.copy(dense_, orig_);
  }
  const View& view() const { return dense_; }
  template <typename T> T* ptr() const { return static_cast<T*>(dense_.data); }
  void commit() {
    if (copied_ && mode_ != In && orig_.numel() > 0) b_->copy(orig_, dense_);
  }

 private:
  CudaBackend* b_;
  View orig_, dense_;
  Mode mode_;
  Scratch scratch_;
  bool copied_ = false;
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Default cap of capped_blocks: enough blocks to fill any GPU; a grid-stride
// loop covers work past it.
inline constexpr int64_t kMaxGridStrideBlocks = 65536;
// Cap for kernels that give each row its own block: rows past it loop.
inline constexpr int64_t kMaxRowBlocks = int64_t{1} << 20;

// Blocks for a grid-stride loop over `work_items` with `threads` items per
// block: never more than the work, never more than max_blocks.
inline unsigned capped_blocks(int64_t work_items, int threads, int64_t max_blocks = kMaxGridStrideBlocks) {
  int64_t blocks = ceil_div(work_items, threads);
  if (blocks < 1) blocks = 1;
  if (blocks > max_blocks) blocks = max_blocks;
  return static_cast<unsigned>(blocks);
}

}  // namespace anvil::cuda

// --- strided offsets for the nn kernels (dtype dispatch: kernels/cuda/dtype_dispatch.h) ---
#include <array>

#include "kernels/cuda/dtype_dispatch.h"

#include "kernels/cuda/device/kernel_kit.cuh"

namespace anvil::cuda {

// Offsets of N views walked in the row-major order of `shape`.
template <int N>
kit::Offsets<N> make_offsets(const char* op, const Shape& shape, const std::array<const Shape*, N>& strides) {
  ANVIL_CHECK(shape.size() <= static_cast<size_t>(dev::kMaxDims), op, ": at most ", dev::kMaxDims,
              " dims are supported on CUDA, got shape ", shape);
  kit::Offsets<N> o;
  o.ndim = static_cast<int>(shape.size());
  int64_t numel = 1;
  for (int d = 0; d < o.ndim; ++d) {  // innermost first, as the calculator stores them
    const size_t from = shape.size() - 1 - static_cast<size_t>(d);
    o.sizes[d] = shape[from];
    numel *= shape[from];
    for (int t = 0; t < N; ++t) o.strides[d][t] = (*strides[t])[from];
  }
  o.index32 = numel <= int64_t{0xFFFFFFFF};
  return o;
}

}  // namespace anvil::cuda
