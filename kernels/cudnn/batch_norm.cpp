// Batch norm over [N, C, *] through cuDNN (CUDNN_BATCHNORM_SPATIAL on the
// input viewed as [N, C, S, 1]), with the CPU kernel's semantics:
//   training: save_mean = batch mean, save_invstd = 1 / sqrt(biased var + eps),
//             running_mean/var (if given) = (1 - momentum) * running + momentum *
//             (batch mean / unbiased batch var); cuDNN's exponentialAverageFactor
//             is the momentum and its running variance is the unbiased one.
//   eval:     normalises with running_mean/var; save_mean/save_invstd are set
//             from them (the backward pass reads them).
// cuDNN keeps per-channel values in float32 (float64 for float64 inputs):
// weight, bias, running stats and the saved stats are cast to and from that
// type when the views are in another dtype or not contiguous. The backward
// pass in training mode is cudnnBatchNormalizationBackward; in eval mode the
// statistics are constants and our own kernels compute the (simpler) gradient.
#include <optional>

#include "core/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/norm_kernels.h"
#include "kernels/cuda/nvtx.h"
#include "kernels/cuda/scratch.h"
#include "kernels/cudnn/cudnn_handles.h"
#include "kernels/cudnn/norm_pool_kernels.h"
#include "kernels/shapes/layouts.h"

namespace anvil::cuda {
namespace {

using shapes::ChannelLayout;

DType param_type(DType x) { return x == DType::Float64 ? DType::Float64 : DType::Float32; }

// A per-channel [C] view as a dense view (channel count flattened to 1-D).
View flat(const View& v, int64_t c) {
  View r = v;
  if (v.dim() != 1) {
    // Per-channel views may have any shape with C elements; the backend's
    // copy needs matching shapes, so a non-1-D view must be contiguous.
    ANVIL_CHECK(v.is_contiguous(), "batch_norm: per-channel tensor of shape ", v.shape, " must be 1-D or contiguous");
    r.shape = {c};
    r.strides = {1};
  }
  return r;
}

// A per-channel value in the parameter type: in place when possible, else a
// dense (cast) copy; write_back() copies a modified copy back to the view.
class ParamBuffer {
 public:
  ParamBuffer(CudaRuntime& backend, const View* v, DType param, int64_t c, bool read) {
    if (v) arg_.emplace(backend, flat(*v, c), param, read ? DenseArg::InOut : DenseArg::Out);
  }
  // Ones or zeros when the caller gave no view (weight/bias absent).
  ParamBuffer(CudaRuntime& backend, int device, DType param, int64_t c, double value)
      : buffer_(dense_buffer(backend, device, param, {c})) {
    fill(buffer_.view, Scalar(value));
  }
  // Scratch of C values, written by cuDNN and not wanted by the caller.
  static ParamBuffer scratch(CudaRuntime& backend, int device, DType param, int64_t c) {
    ParamBuffer b(backend, nullptr, param, c, false);
    b.buffer_ = dense_buffer(backend, device, param, {c});
    return b;
  }

  void* data() const { return arg_ ? arg_->data() : buffer_.view.data; }
  void write_back() {
    if (arg_) arg_->commit();
  }

 private:
  std::optional<DenseArg> arg_;
  DenseBuffer buffer_;
};

}  // namespace

void batch_norm(const View& out, const View& save_mean, const View& save_invstd, const View& in, const View* weight,
                const View* bias, const View* running_mean, const View* running_var, const BatchNormParams& p) {
  ANVIL_NVTX_RANGE("batch_norm");
  const char* op = "batch_norm";
  const ChannelLayout l =
      shapes::check_batch_norm(out, save_mean, save_invstd, in, weight, bias, running_mean, running_var, p.training);
  const DType dtype = in.dtype, param = param_type(dtype);
  const cudnnDataType_t type = cudnn_type(op, dtype);
  const int device = in.device_index;
  DeviceGuard guard(device);
  if (in.numel() == 0) return;
  cudaStream_t s = stream(device);
  cudnnHandle_t handle = cudnn_handle(device, s);

  const DenseArg x(cuda_runtime(), in, dtype, DenseArg::In);
  DenseArg y(cuda_runtime(), out, DenseArg::Out);
  TensorDesc x_desc, param_desc;
  x_desc.set_nchw(type, l.n, l.c, l.s, 1);
  ANVIL_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(param_desc, x_desc, CUDNN_BATCHNORM_SPATIAL));
  ParamBuffer w = weight ? ParamBuffer(cuda_runtime(), weight, param, l.c, true)
                         : ParamBuffer(cuda_runtime(), device, param, l.c, 1.0);
  ParamBuffer b =
      bias ? ParamBuffer(cuda_runtime(), bias, param, l.c, true) : ParamBuffer(cuda_runtime(), device, param, l.c, 0.0);
  ParamBuffer mean_out(cuda_runtime(), &save_mean, param, l.c, false),
      invstd_out(cuda_runtime(), &save_invstd, param, l.c, false);
  const CudnnScalars& sc = cudnn_scalars();
  // cuDNN computes in float for all but double inputs.
  const void* one = sc.one(dtype);
  const void* zero = sc.zero(dtype);

  if (p.training) {
    // cuDNN updates both running statistics or neither.
    const bool running = running_mean || running_var;
    ParamBuffer rm = running_mean ? ParamBuffer(cuda_runtime(), running_mean, param, l.c, true)
                                  : ParamBuffer::scratch(cuda_runtime(), device, param, l.c);
    ParamBuffer rv = running_var ? ParamBuffer(cuda_runtime(), running_var, param, l.c, true)
                                 : ParamBuffer::scratch(cuda_runtime(), device, param, l.c);
    if (running && !running_mean) fill(View{rm.data(), param, {l.c}, {1}, device}, Scalar(0.0));
    if (running && !running_var) fill(View{rv.data(), param, {l.c}, {1}, device}, Scalar(1.0));
    ANVIL_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
        handle, CUDNN_BATCHNORM_SPATIAL, one, zero, x_desc, x.data(), x_desc, y.data(), param_desc, w.data(), b.data(),
        p.momentum, running ? rm.data() : nullptr, running ? rv.data() : nullptr, p.eps, mean_out.data(),
        invstd_out.data()));
    rm.write_back();
    rv.write_back();
  } else {
    ParamBuffer rm(cuda_runtime(), running_mean, param, l.c, true), rv(cuda_runtime(), running_var, param, l.c, true);
    ANVIL_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(handle, CUDNN_BATCHNORM_SPATIAL, one, zero, x_desc,
                                                              x.data(), x_desc, y.data(), param_desc, w.data(),
                                                              b.data(), rm.data(), rv.data(), p.eps));
    batch_norm_eval_stats(param, mean_out.data(), invstd_out.data(), rm.data(), rv.data(), l.c, p.eps, s);
  }
  mean_out.write_back();
  invstd_out.write_back();
  y.commit();
}

void batch_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                         const View& in, const View* weight, const View& save_mean, const View& save_invstd,
                         const BatchNormParams& p) {
  ANVIL_NVTX_RANGE("batch_norm_backward");
  const char* op = "batch_norm_backward";
  const ChannelLayout l =
      shapes::check_batch_norm_backward(grad_in, grad_weight, grad_bias, grad_out, in, weight, save_mean, save_invstd);
  const DType dtype = in.dtype, param = param_type(dtype);
  const cudnnDataType_t type = cudnn_type(op, dtype);
  const int device = in.device_index;
  DeviceGuard guard(device);
  cudaStream_t s = stream(device);
  if (in.numel() == 0) {
    // Sums over no values; the gradient of no elements is nothing.
    if (grad_weight) fill(*grad_weight, Scalar(0.0));
    if (grad_bias) fill(*grad_bias, Scalar(0.0));
    return;
  }

  const DenseArg x(cuda_runtime(), in, dtype, DenseArg::In), dy(cuda_runtime(), grad_out, dtype, DenseArg::In);
  ParamBuffer mean(cuda_runtime(), &save_mean, param, l.c, true),
      invstd(cuda_runtime(), &save_invstd, param, l.c, true);
  ParamBuffer gw = grad_weight ? ParamBuffer(cuda_runtime(), grad_weight, param, l.c, false)
                               : ParamBuffer::scratch(cuda_runtime(), device, param, l.c);
  ParamBuffer gb = grad_bias ? ParamBuffer(cuda_runtime(), grad_bias, param, l.c, false)
                             : ParamBuffer::scratch(cuda_runtime(), device, param, l.c);
  std::optional<DenseArg> dx;
  DenseBuffer dx_scratch;  // cuDNN always writes dx
  void* dx_data = nullptr;
  if (grad_in.data) {
    ANVIL_CHECK(grad_in.dtype == dtype, "batch_norm_backward: grad_in dtype ", dtype_name(grad_in.dtype),
                " differs from input dtype ", dtype_name(dtype));
    dx.emplace(cuda_runtime(), grad_in, DenseArg::Out);
    dx_data = dx->data();
  }

  if (p.training) {
    ParamBuffer w = weight ? ParamBuffer(cuda_runtime(), weight, param, l.c, true)
                           : ParamBuffer(cuda_runtime(), device, param, l.c, 1.0);
    if (!dx_data) {
      dx_scratch = dense_buffer(cuda_runtime(), device, dtype, in.shape);
      dx_data = dx_scratch.view.data;
    }
    cudnnHandle_t handle = cudnn_handle(device, s);
    TensorDesc x_desc, param_desc;
    x_desc.set_nchw(type, l.n, l.c, l.s, 1);
    ANVIL_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(param_desc, x_desc, CUDNN_BATCHNORM_SPATIAL));
    const CudnnScalars& sc = cudnn_scalars();
    ANVIL_CUDNN_CHECK(cudnnBatchNormalizationBackward(handle, CUDNN_BATCHNORM_SPATIAL, sc.one(dtype), sc.zero(dtype),
                                                      sc.one(dtype), sc.zero(dtype), x_desc, x.data(), x_desc,
                                                      dy.data(), x_desc, dx_data, param_desc, w.data(), gw.data(),
                                                      gb.data(), p.eps, mean.data(), invstd.data()));
  } else {
    ParamBuffer w(cuda_runtime(), weight, param, l.c, true);  // null data when there is no weight
    batch_norm_eval_backward(dtype, param, dx_data, grad_weight ? gw.data() : nullptr, grad_bias ? gb.data() : nullptr,
                             dy.data(), x.data(), w.data(), mean.data(), invstd.data(), l.n, l.c, l.s, s);
  }
  gw.write_back();
  gb.write_back();
  if (dx) dx->commit();
}

ANVIL_REGISTER_KERNEL(kernel::BatchNorm, CUDA, batch_norm);
ANVIL_REGISTER_KERNEL(kernel::BatchNormBackward, CUDA, batch_norm_backward);

}  // namespace anvil::cuda
