// The CudaRuntime methods that a real GPU serves with cuBLAS and cuDNN
// (kernels/cublas, kernels/cudnn), for the emulated GPU, where those
// libraries are absent: matmul and linear run on the hand-written GEMM
// ladder (kernels/cuda/gemm, the best rung that takes the shape; float64 on
// a shared-tile kernel here), conv2d as
// im2col + that matmul (kernels/cuda/conv2d_im2col.cpp), pooling and batch
// norm on the hand-written kernels of kernels/cudnn/norm_pool_kernels.cu;
// cuDNN's fused attention (kernels/cudnn/sdpa.h) declines every call, so
// attention runs the flash kernels. Only the emulated build compiles this file.
#include <algorithm>
#include <optional>

#include "core/base/error.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/conv2d_im2col.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/ops/linalg_kernels.h"
#include "kernels/ops/norm_kernels.h"
#include "kernels/cuda/gemm/gemm.h"
#include "kernels/cuda/gemm/ladder_matmul.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/cudnn/norm_pool_kernels.h"
#include "kernels/cudnn/sdpa.h"
#include "kernels/shapes/geometry.h"
#include "kernels/shapes/layouts.h"
#include "kernels/shapes/matmul_checks.h"

namespace anvil::cuda {
namespace {

void check_matmul_dtype(DType t) {
  ANVIL_CHECK(t == DType::Float32 || t == DType::BFloat16 || t == DType::Float16 || t == DType::Float64,
              "matmul: dtype ", t, " is not supported on the emulated GPU: its matmul runs on the hand-written GEMM ",
              "ladder (float32; 16-bit inputs are widened to float32 as tensor cores accumulate) or, for float64, ",
              "a shared-tile kernel; cuBLAS is absent there");
}

// float64 C = alpha * A @ B + beta * C, dense row-major, for the emulated GPU
// only (the ladder is float32; a real GPU runs float64 on cuBLAS): rung 03's
// shared-memory tiles in double, one output per thread.
constexpr int kTile64 = 16;

__global__ void matmul_float64_tiles(double* c, const double* a, const double* b, int64_t m, int64_t n, int64_t k,
                                     double alpha, double beta) {
  __shared__ double a_tile[kTile64][kTile64], b_tile[kTile64][kTile64];
  const int64_t row = blockIdx.y * int64_t{kTile64} + threadIdx.y, col = blockIdx.x * int64_t{kTile64} + threadIdx.x;
  double acc = 0;
  for (int64_t k0 = 0; k0 < k; k0 += kTile64) {
    const int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    a_tile[threadIdx.y][threadIdx.x] = row < m && ka < k ? a[row * k + ka] : 0.0;
    b_tile[threadIdx.y][threadIdx.x] = kb < k && col < n ? b[kb * n + col] : 0.0;
    __syncthreads();
    for (int i = 0; i < kTile64; ++i) acc += a_tile[threadIdx.y][i] * b_tile[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = alpha * acc + (beta == 0.0 ? 0.0 : beta * c[row * n + col]);
}

}  // namespace

void matmul(const View& out_in, const View& a_in, const View& b_in, const MatmulParams& p) {
  const shapes::BatchedMatmul m = shapes::check_matmul(out_in, a_in, b_in);  // the CPU's checks and messages
  check_matmul_dtype(m.out.dtype);
  ANVIL_CHECK(m.a.dtype == m.out.dtype && m.b.dtype == m.out.dtype, "matmul: mixed dtypes ", m.a.dtype, ", ", m.b.dtype,
              " -> ", m.out.dtype, " are not supported on the emulated GPU");
  const int device = m.out.device_index;
  DeviceGuard guard(device);
  const int64_t batches = m.out.shape[0], rows = m.out.shape[1], cols = m.out.shape[2], inner = m.a.shape[2];
  if (batches == 0 || rows == 0 || cols == 0) return;
  // Dense row-major operands in float32 (the rungs; 16-bit inputs widened as
  // tensor cores accumulate) or float64 (the shared-tile kernel above).
  const DType compute = m.out.dtype == DType::Float64 ? DType::Float64 : DType::Float32;
  DenseArg a(cuda_runtime(), m.a, compute, DenseArg::In), b(cuda_runtime(), m.b, compute, DenseArg::In);
  DenseArg out(cuda_runtime(), m.out, compute, p.beta == 0.0f ? DenseArg::Out : DenseArg::InOut);
  // The ladder's own routing (the best rung for the shape), as on a real GPU
  // with ANVIL_GEMM_LADDER=1; what it declines runs below, one batch at a time.
  if (compute == DType::Float32 && inner > 0 &&
      gemm::ladder_matmul(out.view(), a.view(), b.view(), p, stream(device))) {
    out.commit();
    return;
  }
  const int64_t elem = static_cast<int64_t>(itemsize(compute));
  for (int64_t i = 0; i < batches; ++i) {
    const char* a_i = static_cast<const char*>(a.view().data) + i * rows * inner * elem;
    const char* b_i = static_cast<const char*>(b.view().data) + i * inner * cols * elem;
    char* c_i = static_cast<char*>(out.view().data) + i * rows * cols * elem;
    if (inner == 0) {  // no products: out = beta * out
      ANVIL_CHECK(p.beta == 0.0f || p.beta == 1.0f, "matmul on the emulated GPU: an empty inner dimension with beta ",
                  p.beta, " is not supported");
      if (p.beta == 0.0f) fill(View{c_i, compute, {rows, cols}, {cols, 1}, device}, Scalar(0.0));
      continue;
    }
    if (compute == DType::Float64) {
      const dim3 grid(static_cast<unsigned>(ceil_div(cols, kTile64)), static_cast<unsigned>(ceil_div(rows, kTile64)));
      launch_kernel(matmul_float64_tiles, grid, dim3(kTile64, kTile64), 0, stream(device))(
          reinterpret_cast<double*>(c_i), reinterpret_cast<const double*>(a_i), reinterpret_cast<const double*>(b_i),
          rows, cols, inner, p.alpha, p.beta);
      ANVIL_CUDA_CHECK_LAUNCH("matmul_float64_tiles");
      continue;
    }
    // Shapes or leading dimensions the tuned rungs refuse: rung 01 takes any.
    gemm::GemmArgs g;
    g.dtype = gemm::GemmDType::Float32;
    g.M = rows, g.N = cols, g.K = inner;
    g.lda = inner, g.ldb = cols, g.ldc = cols;
    g.alpha = p.alpha, g.beta = p.beta;
    g.A = a_i, g.B = b_i, g.C = c_i;
    const std::string why = gemm::gemm_unsupported_reason(gemm::GemmRung::Naive, g);
    ANVIL_CHECK(why.empty(), "matmul on the emulated GPU: no GEMM rung takes ", rows, "x", inner, " @ ", inner, "x",
                cols, ": ", why);
    gemm::launch_gemm(gemm::GemmRung::Naive, g, stream(device));
  }
  out.commit();
}

void linear(const View& out, const View& in, const View& weight, const View* bias) {
  linear_as_matmul(DeviceType::CUDA, out, in, weight, bias);  // matmul on the ladder, then the bias as a broadcast add
}

void pool2d(PoolKind kind, const View& out, const View& in, const Pool2dParams& p) {
  const PoolShape g = shapes::pool_geometry("pool2d", in.shape, out.shape, p);
  ANVIL_CHECK(is_floating(out.dtype) && in.dtype == out.dtype, "pool2d: expected matching floating dtypes, got ",
              in.dtype, " and ", out.dtype);
  DeviceGuard guard(out.device_index);
  if (out.numel() == 0) return;
  DenseArg x(cuda_runtime(), in, in.dtype, DenseArg::In), y(cuda_runtime(), out, out.dtype, DenseArg::Out);
  pool_forward_dense(kind, out.dtype, y.view().data, x.view().data, g, stream(out.device_index));
  y.commit();
}

void pool2d_backward(PoolKind kind, const View& grad_in, const View& grad_out, const View& in, const View& /*out*/,
                     const Pool2dParams& p) {
  const PoolShape g = shapes::pool_geometry("pool2d_backward", grad_in.shape, grad_out.shape, p);
  ANVIL_CHECK(kind != PoolKind::Max || in.shape == grad_in.shape, "pool2d_backward: max pooling needs the input ",
              "of the forward pass with grad_in's shape ", grad_in.shape, ", got ", in.shape);
  DeviceGuard guard(grad_in.device_index);
  if (grad_in.numel() == 0) return;
  if (grad_out.numel() == 0) {
    fill(grad_in, Scalar(0.0));
    return;
  }
  DenseArg dy(cuda_runtime(), grad_out, grad_in.dtype, DenseArg::In),
      dx(cuda_runtime(), grad_in, grad_in.dtype, DenseArg::Out);
  DenseArg x(cuda_runtime(), kind == PoolKind::Max ? in : grad_out, grad_in.dtype, DenseArg::In);
  pool_backward_dense(kind, grad_in.dtype, dx.view().data, dy.view().data, x.view().data, g,
                      stream(grad_in.device_index));
  dx.commit();
}

void conv2d(const View& out, const View& in, const View& weight, const View* bias, const Conv2dParams& p) {
  conv2d_im2col(cuda_runtime(), out, in, weight, bias, p);
}
void conv2d_backward_input(const View& grad_in, const View& grad_out, const View& weight, const Conv2dParams& p) {
  conv2d_backward_input_im2col(cuda_runtime(), grad_in, grad_out, weight, p);
}
void conv2d_backward_weight(const View& grad_weight, const View& grad_out, const View& in, const Conv2dParams& p) {
  conv2d_backward_weight_im2col(cuda_runtime(), grad_weight, grad_out, in, p);
}

// Batch norm on the hand-written kernels of norm_pool_kernels.cu, with the
// CPU kernel's semantics (see kernels/cudnn/batch_norm.cpp for the cuDNN
// path): per-channel values in float32 (float64 for float64 inputs), cast to
// and from other dtypes or layouts by DenseArg.
namespace {

DType param_type(DType x) { return x == DType::Float64 ? DType::Float64 : DType::Float32; }

// A per-channel view of any shape with C elements as [C] (non-1-D ones must be
// contiguous, as on the cuDNN path).
View per_channel(const View& v, int64_t c) {
  if (v.dim() == 1) return v;
  ANVIL_CHECK(v.is_contiguous(), "batch_norm: per-channel tensor of shape ", v.shape, " must be 1-D or contiguous");
  View r = v;
  r.shape = {c};
  r.strides = {1};
  return r;
}

// An optional per-channel operand: data() is null when the caller gave none.
class ChannelArg {
 public:
  ChannelArg(CudaRuntime& b, const View* v, DType param, int64_t c, DenseArg::Mode mode) {
    if (v) arg_.emplace(b, per_channel(*v, c), param, mode);
  }
  void* data() const { return arg_ ? arg_->view().data : nullptr; }
  void commit() {
    if (arg_) arg_->commit();
  }

 private:
  std::optional<DenseArg> arg_;
};

}  // namespace

void batch_norm(const View& out, const View& save_mean, const View& save_invstd, const View& in, const View* weight,
                const View* bias, const View* running_mean, const View* running_var, const BatchNormParams& p) {
  const shapes::ChannelLayout l =
      shapes::check_batch_norm(out, save_mean, save_invstd, in, weight, bias, running_mean, running_var, p.training);
  const DType dtype = in.dtype, param = param_type(dtype);
  const int device = in.device_index;
  DeviceGuard guard(device);
  if (in.numel() == 0) return;
  cudaStream_t s = stream(device);
  DenseArg x(cuda_runtime(), in, dtype, DenseArg::In), y(cuda_runtime(), out, dtype, DenseArg::Out);
  ChannelArg mean(cuda_runtime(), &save_mean, param, l.c, DenseArg::Out),
      invstd(cuda_runtime(), &save_invstd, param, l.c, DenseArg::Out);
  ChannelArg w(cuda_runtime(), weight, param, l.c, DenseArg::In), b(cuda_runtime(), bias, param, l.c, DenseArg::In);
  const DenseArg::Mode running_mode = p.training ? DenseArg::InOut : DenseArg::In;
  ChannelArg rm(cuda_runtime(), running_mean, param, l.c, running_mode),
      rv(cuda_runtime(), running_var, param, l.c, running_mode);
  if (p.training) {
    batch_norm_train_stats(dtype, param, mean.data(), invstd.data(), rm.data(), rv.data(), x.view().data, l.n, l.c, l.s,
                           p.momentum, p.eps, s);
    rm.commit();
    rv.commit();
  } else {
    batch_norm_eval_stats(param, mean.data(), invstd.data(), rm.data(), rv.data(), l.c, p.eps, s);
  }
  batch_norm_apply(dtype, param, y.view().data, x.view().data, mean.data(), invstd.data(), w.data(), b.data(), l.n, l.c,
                   l.s, s);
  mean.commit();
  invstd.commit();
  y.commit();
}

void batch_norm_backward(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                         const View& in, const View* weight, const View& save_mean, const View& save_invstd,
                         const BatchNormParams& p) {
  const shapes::ChannelLayout l =
      shapes::check_batch_norm_backward(grad_in, grad_weight, grad_bias, grad_out, in, weight, save_mean, save_invstd);
  const DType dtype = in.dtype, param = param_type(dtype);
  const int device = in.device_index;
  DeviceGuard guard(device);
  if (in.numel() == 0) {  // sums over no values
    if (grad_weight) fill(*grad_weight, Scalar(0.0));
    if (grad_bias) fill(*grad_bias, Scalar(0.0));
    return;
  }
  std::optional<DenseArg> dx;
  if (grad_in.data) {
    ANVIL_CHECK(grad_in.dtype == dtype, "batch_norm_backward: grad_in dtype ", grad_in.dtype,
                " differs from input dtype ", dtype);
    dx.emplace(cuda_runtime(), grad_in, dtype, DenseArg::Out);
  }
  cudaStream_t s = stream(device);
  DenseArg x(cuda_runtime(), in, dtype, DenseArg::In), dy(cuda_runtime(), grad_out, dtype, DenseArg::In);
  ChannelArg mean(cuda_runtime(), &save_mean, param, l.c, DenseArg::In),
      invstd(cuda_runtime(), &save_invstd, param, l.c, DenseArg::In);
  ChannelArg w(cuda_runtime(), weight, param, l.c, DenseArg::In);
  ChannelArg gw(cuda_runtime(), grad_weight, param, l.c, DenseArg::Out),
      gb(cuda_runtime(), grad_bias, param, l.c, DenseArg::Out);
  void* dx_data = dx ? dx->view().data : nullptr;
  if (p.training) {
    // grad_in needs both channel sums, wanted by the caller or not.
    Scratch sums(cuda_runtime(), device, 2 * static_cast<size_t>(l.c) * itemsize(param));
    void* sum_g_xhat = gw.data() ? gw.data() : sums.get();
    void* sum_g = gb.data() ? gb.data() : static_cast<char*>(sums.get()) + l.c * itemsize(param);
    batch_norm_train_backward(dtype, param, dx_data, sum_g_xhat, sum_g, dy.view().data, x.view().data, w.data(),
                              mean.data(), invstd.data(), l.n, l.c, l.s, s);
  } else {
    batch_norm_eval_backward(dtype, param, dx_data, gw.data(), gb.data(), dy.view().data, x.view().data, w.data(),
                             mean.data(), invstd.data(), l.n, l.c, l.s, s);
  }
  gw.commit();
  gb.commit();
  if (dx) dx->commit();
}

namespace gemm::detail {
// Rung 09 is wgmma and TMA, which the emulated GPU lacks: not built here
// (rung 08's mma.sync is: device/tensor_core.cuh), and best_rung never picks
// it (hopper_wgmma_built).
bool hopper_wgmma_built() { return false; }
void launch_hopper_wgmma(const GemmArgs&, cudaStream_t) {
  fail("GEMM rung 09_hopper_wgmma is wgmma and TMA, which the emulated GPU does not have (a real sm_90 GPU runs it)");
}
}  // namespace gemm::detail

bool cudnn_sdpa_available() { return false; }

std::string cudnn_sdpa_check_ops(const CudnnSdpaProblem&, bool) { return "cuDNN is not emulated"; }

CudnnSdpaOutcome cudnn_sdpa_forward(CudaRuntime&, int, cudaStream_t, const CudnnSdpaProblem&,
                                    const CudnnSdpaForwardArgs&) {
  return {"cuDNN is not emulated", true};
}

CudnnSdpaOutcome cudnn_sdpa_backward(CudaRuntime&, int, cudaStream_t, const CudnnSdpaProblem&,
                                     const CudnnSdpaBackwardArgs&) {
  return {"cuDNN is not emulated", true};
}

ANVIL_REGISTER_KERNEL(kernel::Matmul, CUDA, matmul);
ANVIL_REGISTER_KERNEL(kernel::Linear, CUDA, linear);
ANVIL_REGISTER_KERNEL(kernel::Conv2d, CUDA, conv2d);
ANVIL_REGISTER_KERNEL(kernel::Conv2dBackwardInput, CUDA, conv2d_backward_input);
ANVIL_REGISTER_KERNEL(kernel::Conv2dBackwardWeight, CUDA, conv2d_backward_weight);
ANVIL_REGISTER_KERNEL(kernel::Pool2d, CUDA, pool2d);
ANVIL_REGISTER_KERNEL(kernel::Pool2dBackward, CUDA, pool2d_backward);
ANVIL_REGISTER_KERNEL(kernel::BatchNorm, CUDA, batch_norm);
ANVIL_REGISTER_KERNEL(kernel::BatchNormBackward, CUDA, batch_norm_backward);

}  // namespace anvil::cuda
