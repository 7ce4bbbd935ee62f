#include "kernels/cudnn/cudnn_handles.h"

#include <limits>
#include <vector>

namespace anvil::cuda {

cudnnHandle_t cudnn_handle(int device, cudaStream_t stream) {
  thread_local std::vector<cudnnHandle_t> handles;
  if (device >= static_cast<int>(handles.size())) handles.resize(static_cast<size_t>(device) + 1, nullptr);
  cudnnHandle_t& h = handles[static_cast<size_t>(device)];
  if (h == nullptr) ANVIL_CUDNN_CHECK(cudnnCreate(&h));
  ANVIL_CUDNN_CHECK(cudnnSetStream(h, stream));
  return h;
}

cudnnDataType_t cudnn_type(const char* op, DType t) {
  switch (t) {
    case DType::Float32:
      return CUDNN_DATA_FLOAT;
    case DType::Float64:
      return CUDNN_DATA_DOUBLE;
    case DType::Float16:
      return CUDNN_DATA_HALF;
    case DType::BFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      fail(op, ": dtype ", dtype_name(t),
           " is not supported on CUDA (floating dtypes only: float32, float64, float16, bfloat16)");
  }
}

int to_cudnn_int(const char* op, int64_t v) {
  ANVIL_CHECK(v >= 0 && v <= std::numeric_limits<int>::max(), op, ": size ", v,
              " does not fit cuDNN's 32-bit dimensions");
  return static_cast<int>(v);
}

void TensorDesc::set_nchw(cudnnDataType_t type, int64_t n, int64_t c, int64_t h, int64_t w) {
  ANVIL_CHECK(n * c * h * w <= std::numeric_limits<int>::max(), "cuDNN: tensor [", n, ", ", c, ", ", h, ", ", w,
              "] has more than 2^31 elements");
  ANVIL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d_, CUDNN_TENSOR_NCHW, type, to_cudnn_int("cuDNN", n),
                                               to_cudnn_int("cuDNN", c), to_cudnn_int("cuDNN", h),
                                               to_cudnn_int("cuDNN", w)));
}

void FilterDesc::set_kcrs(cudnnDataType_t type, int64_t k, int64_t c, int64_t r, int64_t s) {
  ANVIL_CUDNN_CHECK(cudnnSetFilter4dDescriptor(d_, type, CUDNN_TENSOR_NCHW, to_cudnn_int("cuDNN", k),
                                               to_cudnn_int("cuDNN", c), to_cudnn_int("cuDNN", r),
                                               to_cudnn_int("cuDNN", s)));
}

}  // namespace anvil::cuda
