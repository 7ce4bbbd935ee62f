// The CudaBackend methods that a real GPU serves with cuBLAS and cuDNN
// (kernels/cublas, kernels/cudnn), for the emulated GPU, where those
// libraries are absent: matmul and linear run on the hand-written GEMM
// ladder (kernels/cuda/gemm, the best rung that takes the shape), pooling on
// the hand-written kernels of kernels/cudnn/norm_pool_kernels.cu. Only the
// emulated build compiles this file.
#include <algorithm>

#include "core/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/dense_arg.h"
#include "kernels/cuda/gemm/gemm.h"
#include "kernels/cudnn/norm_pool_kernels.h"
#include "kernels/shapes/geometry.h"
#include "kernels/shapes/matmul_checks.h"

namespace anvil::cuda {
namespace {

void check_ladder_dtype(const char* op, DType t) {
  ANVIL_CHECK(t == DType::Float32 || t == DType::BFloat16 || t == DType::Float16, op, ": dtype ", t,
              " is not supported on the emulated GPU: its matmul runs on the hand-written GEMM ladder (float32; ",
              "16-bit inputs are widened to float32 as tensor cores accumulate), and cuBLAS is absent there");
}

[[noreturn]] void absent(const char* op) {
  fail(op, ": not available on the emulated GPU: this op runs on cuDNN there is no hand-written kernel for yet ",
       "(the emulated build has no cuDNN); run it on the CPU or on a real GPU");
}

}  // namespace

void CudaBackend::matmul(const View& out_in, const View& a_in, const View& b_in, const MatmulParams& p) {
  const shapes::BatchedMatmul m = shapes::check_matmul(out_in, a_in, b_in);  // the CPU's checks and messages
  check_ladder_dtype("matmul", m.out.dtype);
  ANVIL_CHECK(m.a.dtype == m.out.dtype && m.b.dtype == m.out.dtype, "matmul: mixed dtypes ", m.a.dtype, ", ",
              m.b.dtype, " -> ", m.out.dtype, " are not supported on the emulated GPU");
  const int device = m.out.device_index;
  DeviceGuard guard(device);
  const int64_t batches = m.out.shape[0], rows = m.out.shape[1], cols = m.out.shape[2], inner = m.a.shape[2];
  if (batches == 0 || rows == 0 || cols == 0) return;
  // Dense row-major float32 operands: the rungs 01-07 take a leading
  // dimension, not strides, and float32 only (rungs 08/09 are tensor-core PTX).
  DenseArg a(*this, m.a, DType::Float32, DenseArg::In), b(*this, m.b, DType::Float32, DenseArg::In);
  DenseArg out(*this, m.out, DType::Float32, p.beta == 0.0f ? DenseArg::Out : DenseArg::InOut);
  const size_t elem = sizeof(float);
  for (int64_t i = 0; i < batches; ++i) {
    gemm::GemmArgs g;
    g.dtype = gemm::GemmDType::Float32;
    g.M = rows, g.N = cols, g.K = inner;
    g.lda = std::max<int64_t>(inner, 1), g.ldb = cols, g.ldc = cols;
    g.alpha = p.alpha, g.beta = p.beta;
    g.A = static_cast<const char*>(a.view().data) + i * rows * inner * static_cast<int64_t>(elem);
    g.B = static_cast<const char*>(b.view().data) + i * inner * cols * static_cast<int64_t>(elem);
    g.C = static_cast<char*>(out.view().data) + i * rows * cols * static_cast<int64_t>(elem);
    if (inner == 0) {  // no products: out = beta * out
      View o = out.view();
      o.shape = {rows, cols};
      o.strides = {cols, 1};
      o.data = const_cast<void*>(g.C);
      ANVIL_CHECK(p.beta == 0.0f || p.beta == 1.0f, "matmul on the emulated GPU: an empty inner dimension with beta ",
                  p.beta, " is not supported");
      if (p.beta == 0.0f) fill(o, Scalar(0.0));
      continue;
    }
    gemm::GemmRung rung = gemm::best_rung(g);
    if (rung == gemm::GemmRung{0} || !gemm::gemm_unsupported_reason(rung, g).empty()) rung = gemm::GemmRung::Naive;
    const std::string why = gemm::gemm_unsupported_reason(rung, g);
    ANVIL_CHECK(why.empty(), "matmul on the emulated GPU: no GEMM rung takes ", rows, "x", inner, " @ ", inner, "x",
                cols, ": ", why);
    gemm::launch_gemm(rung, g, stream(device));
  }
  out.commit();
}

void CudaBackend::linear(const View& out, const View& in, const View& weight, const View* bias) {
  Backend::linear(out, in, weight, bias);  // matmul on the ladder, then the bias as a broadcast add
}

void CudaBackend::pool2d(PoolKind kind, const View& out, const View& in, const Pool2dParams& p) {
  const PoolShape g = shapes::pool_geometry("pool2d", in.shape, out.shape, p);
  ANVIL_CHECK(is_floating(out.dtype) && in.dtype == out.dtype, "pool2d: expected matching floating dtypes, got ",
              in.dtype, " and ", out.dtype);
  DeviceGuard guard(out.device_index);
  if (out.numel() == 0) return;
  DenseArg x(*this, in, in.dtype, DenseArg::In), y(*this, out, out.dtype, DenseArg::Out);
  pool_forward_dense(kind, out.dtype, y.view().data, x.view().data, g, stream(out.device_index));
  y.commit();
}

void CudaBackend::pool2d_backward(PoolKind kind, const View& grad_in, const View& grad_out, const View& in,
                                  const View& /*out*/, const Pool2dParams& p) {
  const PoolShape g = shapes::pool_geometry("pool2d_backward", grad_in.shape, grad_out.shape, p);
  ANVIL_CHECK(kind != PoolKind::Max || in.shape == grad_in.shape, "pool2d_backward: max pooling needs the input ",
              "of the forward pass with grad_in's shape ", grad_in.shape, ", got ", in.shape);
  DeviceGuard guard(grad_in.device_index);
  if (grad_in.numel() == 0) return;
  if (grad_out.numel() == 0) {
    fill(grad_in, Scalar(0.0));
    return;
  }
  DenseArg dy(*this, grad_out, grad_in.dtype, DenseArg::In), dx(*this, grad_in, grad_in.dtype, DenseArg::Out);
  DenseArg x(*this, kind == PoolKind::Max ? in : grad_out, grad_in.dtype, DenseArg::In);
  pool_backward_dense(kind, grad_in.dtype, dx.view().data, dy.view().data, x.view().data, g,
                      stream(grad_in.device_index));
  dx.commit();
}

void CudaBackend::conv2d(const View&, const View&, const View&, const View*, const Conv2dParams&) {
  absent("conv2d");
}
void CudaBackend::conv2d_backward_input(const View&, const View&, const View&, const Conv2dParams&) {
  absent("conv2d_backward_input");
}
void CudaBackend::conv2d_backward_weight(const View&, const View&, const View&, const Conv2dParams&) {
  absent("conv2d_backward_weight");
}
void CudaBackend::batch_norm(const View&, const View&, const View&, const View&, const View*, const View*,
                             const View*, const View*, const BatchNormParams&) {
  absent("batch_norm");
}
void CudaBackend::batch_norm_backward(const View&, const View*, const View*, const View&, const View&, const View*,
                                      const View&, const View&, const BatchNormParams&) {
  absent("batch_norm_backward");
}

namespace gemm::detail {
// Rungs 08 and 09 are inline PTX (mma.sync, wgmma): not built here, and
// best_rung never picks them for the float32 the emulated matmul uses.
bool hopper_wgmma_built() { return false; }
void launch_tensor_core_mma(const GemmArgs&, cudaStream_t) {
  fail("GEMM rung 08_tensor_core_mma is inline PTX (mma.sync) and does not run on the emulated GPU");
}
void launch_hopper_wgmma(const GemmArgs&, cudaStream_t) {
  fail("GEMM rung 09_hopper_wgmma is inline PTX (wgmma, TMA) and does not run on the emulated GPU");
}
}  // namespace gemm::detail

}  // namespace anvil::cuda
