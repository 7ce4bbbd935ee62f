#pragma once
// cuDNN handles, error checking and descriptor wrappers for kernels/cudnn/.
// Included only by the .cpp files here, so cudnn.h stays out of widely
// included headers.
#include <cudnn.h>

#include <cstdint>

#include "core/base/error.h"
#include "kernels/view.h"

#define ANVIL_CUDNN_CHECK(call) \
  do { \
    cudnnStatus_t anvil_cudnn_status_ = (call); \
    if (anvil_cudnn_status_ != CUDNN_STATUS_SUCCESS) { \
      ::anvil::fail(#call, " failed: ", cudnnGetErrorString(anvil_cudnn_status_), " at ", __FILE__, ":", __LINE__); \
    } \
  } while (0)

namespace anvil::cuda {

// The cuDNN handle of the calling thread for `device` (which must be
// current), created on first use and bound to `stream` on every call (a
// cuDNN handle must not be used by two threads at once, hence one per
// thread). Kept for the life of the process.
cudnnHandle_t cudnn_handle(int device, cudaStream_t stream);

// cuDNN's data type for a floating dtype (throws for others, naming `op`).
cudnnDataType_t cudnn_type(const char* op, DType t);
// The type cuDNN computes and scales in: double for float64, float otherwise.
inline bool cudnn_scale_is_double(DType t) { return t == DType::Float64; }

// alpha/beta scaling factors in the type cuDNN reads for `t`.
struct CudnnScalars {
  float f[2];
  double d[2];
  const void* one(DType t) const { return cudnn_scale_is_double(t) ? static_cast<const void*>(&d[1]) : &f[1]; }
  const void* zero(DType t) const { return cudnn_scale_is_double(t) ? static_cast<const void*>(&d[0]) : &f[0]; }
};
inline const CudnnScalars& cudnn_scalars() {
  static const CudnnScalars s{{0.0f, 1.0f}, {0.0, 1.0}};
  return s;
}

class TensorDesc {
 public:
  TensorDesc() { ANVIL_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d_)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  // A packed NCHW tensor.
  void set_nchw(cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w);
  operator cudnnTensorDescriptor_t() const { return d_; }  // NOLINT

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

class FilterDesc {
 public:
  FilterDesc() { ANVIL_CUDNN_CHECK(cudnnCreateFilterDescriptor(&d_)); }
  ~FilterDesc() { cudnnDestroyFilterDescriptor(d_); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  void set_kcrs(cudnnDataType_t type, int64_t k, int64_t c, int64_t r, int64_t s);
  operator cudnnFilterDescriptor_t() const { return d_; }  // NOLINT

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};

// cuDNN's legacy API takes int dims; tensors beyond that are rejected clearly.
int to_cudnn_int(const char* op, int64_t v);

}  // namespace anvil::cuda
