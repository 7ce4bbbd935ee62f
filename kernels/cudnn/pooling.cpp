// Max and average 2-D pooling. The forward pass uses cuDNN (cudnnPoolingForward)
// when the output has cuDNN's (floor-mode) size: max pooling ignores padding
// and propagates NaN, average pooling maps count_include_pad to
// CUDNN_POOLING_AVERAGE_COUNT_{INCLUDE,EXCLUDE}_PADDING; with floor-mode sizes
// no window reaches past the padding, so both divisors equal the CPU's.
// Ceil-mode sizes (windows running past the padded input), float64 and
// bfloat16 use our own kernel.
//
// The backward pass always uses our gather kernel (norm_pool_kernels.cu):
// cuDNN's max-pool backward does not promise the CPU's tie rule (the first
// maximum of each window gets the whole gradient), and ties are common
// (windows of ReLU zeros), so CPU and CUDA gradients would differ there.
#include <optional>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/cudnn/cudnn_handles.h"
#include "kernels/cudnn/norm_pool_kernels.h"

namespace anvil::cuda {
namespace {

using shapes::pool_geometry;  // the same checks (and messages) as the CPU kernels

// Whether cuDNN computes exactly this output size (floor mode) and the
// tensors fit its int dims.
bool cudnn_covers(const PoolShape& g, DType dtype) {
  // float64 and bfloat16 pooling support varies across cuDNN versions; our
  // kernel serves them.
  if (dtype != DType::Float32 && dtype != DType::Float16) return false;
  const bool floor_h = g.h + 2 * g.ph >= g.kh && g.ho == (g.h + 2 * g.ph - g.kh) / g.sh + 1;
  const bool floor_w = g.w + 2 * g.pw >= g.kw && g.wo == (g.w + 2 * g.pw - g.kw) / g.sw + 1;
  const int64_t limit = int64_t{1} << 31;
  return floor_h && floor_w && g.planes * g.h * g.w < limit && g.planes * g.ho * g.wo < limit;
}

void cudnn_pool_forward(cudnnHandle_t handle, PoolKind kind, DType dtype, void* out, const void* in,
                        const PoolShape& g) {
  const char* op = "pool2d";
  const cudnnDataType_t type = cudnn_type(op, dtype);
  TensorDesc x, y;
  x.set_nchw(type, 1, g.planes, g.h, g.w);
  y.set_nchw(type, 1, g.planes, g.ho, g.wo);
  cudnnPoolingDescriptor_t pool = nullptr;
  ANVIL_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&pool));
  const cudnnPoolingMode_t mode = kind == PoolKind::Max ? CUDNN_POOLING_MAX
                                  : g.count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                        : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  const cudnnStatus_t set = cudnnSetPooling2dDescriptor(
      pool, mode, CUDNN_PROPAGATE_NAN, to_cudnn_int(op, g.kh), to_cudnn_int(op, g.kw), to_cudnn_int(op, g.ph),
      to_cudnn_int(op, g.pw), to_cudnn_int(op, g.sh), to_cudnn_int(op, g.sw));
  cudnnStatus_t run = CUDNN_STATUS_SUCCESS;
  if (set == CUDNN_STATUS_SUCCESS) {
    const CudnnScalars& s = cudnn_scalars();
    run = cudnnPoolingForward(handle, pool, s.one(dtype), x, in, s.zero(dtype), y, out);
  }
  cudnnDestroyPoolingDescriptor(pool);
  ANVIL_CUDNN_CHECK(set);
  ANVIL_CUDNN_CHECK(run);
}

}  // namespace

void pool2d(PoolKind kind, const View& out, const View& in, const Pool2dParams& p) {
  ANVIL_NVTX_RANGE("pool2d");
  const PoolShape g = pool_geometry("pool2d", in.shape, out.shape, p);
  const DType dtype = out.dtype;
  cudnn_type("pool2d", dtype);
  const int device = out.device_index;
  DeviceGuard guard(device);
  if (out.numel() == 0) return;
  const DenseArg x(cuda_runtime(), in, dtype, DenseArg::In);
  DenseArg y(cuda_runtime(), out, DenseArg::Out);
  if (cudnn_covers(g, dtype)) {
    cudnn_pool_forward(cudnn_handle(device, stream(device)), kind, dtype, y.data(), x.data(), g);
  } else {
    pool_forward_dense(kind, dtype, y.data(), x.data(), g, stream(device));
  }
  y.commit();
}

void pool2d_backward(PoolKind kind, const View& grad_in, const View& grad_out, const View& in, const View& /*out*/,
                     const Pool2dParams& p) {
  ANVIL_NVTX_RANGE("pool2d_backward");
  const PoolShape g = pool_geometry("pool2d_backward", grad_in.shape, grad_out.shape, p);
  ANVIL_CHECK(kind != PoolKind::Max || in.shape == grad_in.shape, "pool2d_backward: max pooling needs the input ",
              "of the forward pass with grad_in's shape ", grad_in.shape, ", got ", in.shape);
  const DType dtype = grad_in.dtype;
  cudnn_type("pool2d_backward", dtype);
  const int device = grad_in.device_index;
  DeviceGuard guard(device);
  if (grad_in.numel() == 0) return;
  if (grad_out.numel() == 0) {  // no windows: nothing flows back
    fill(grad_in, Scalar(0.0));
    return;
  }
  const DenseArg dy(cuda_runtime(), grad_out, dtype, DenseArg::In);
  std::optional<DenseArg> x;  // max pooling's backward reads the input
  if (kind == PoolKind::Max) x.emplace(cuda_runtime(), in, dtype, DenseArg::In);
  DenseArg dx(cuda_runtime(), grad_in, DenseArg::Out);
  pool_backward_dense(kind, dtype, dx.data(), dy.data(), x ? x->data() : nullptr, g, stream(device));
  dx.commit();
}

ANVIL_REGISTER_KERNEL(kernel::Pool2d, CUDA, pool2d);
ANVIL_REGISTER_KERNEL(kernel::Pool2dBackward, CUDA, pool2d_backward);

}  // namespace anvil::cuda
