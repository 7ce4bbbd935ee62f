// conv2d as im2col + GEMM on the CUDA backend; see conv2d_im2col.h.
//
// The whole batch goes through one GEMM per group: the column matrix is
// [K, N * Ho * Wo] (K = Cin/groups * kH * kW), so the GEMM's result is
// [Cout/groups, N, Ho, Wo], one strided copy away from NCHW. That costs a
// column matrix of the whole batch in device memory (the CPU kernel goes one
// image at a time instead, to stay in cache); in exchange the GEMMs are as
// large as the batch allows, which is what keeps a GPU's (or the emulator's
// worker's) arithmetic busy.
#include "kernels/cuda/conv2d_im2col.h"

#include "core/base/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_runtime.h"
#include "kernels/cuda/im2col.h"
#include "kernels/cuda/scratch.h"
#include "kernels/shapes/geometry.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/conv_pool_kernels.h"
#include "kernels/ops/linalg_kernels.h"
#include "kernels/ops/table_kernels.h"

namespace anvil::cuda {
namespace {

using shapes::ConvGeometry;

void check_dtypes(const char* op, DType want, std::initializer_list<const View*> views) {
  ANVIL_CHECK(is_floating(want), op, ": not supported for dtype ", want);
  for (const View* v : views)
    ANVIL_CHECK(v->dtype == want, op, ": expected every operand in ", want, ", got ", v->dtype, " for shape ",
                v->shape);
}

// A dense 2-D matrix [rows, cols] at `data` (byte offset `offset`).
View matrix(void* data, size_t offset, DType dtype, int64_t rows, int64_t cols, int device) {
  return View{static_cast<char*>(data) + offset, dtype, {rows, cols}, {cols, 1}, device};
}

// The group's channels [N, Cout/groups, Ho, Wo] of an NCHW view (any strides).
View group_channels(const View& v, int64_t per_group, int64_t group) {
  View r = v;
  r.shape[1] = per_group;
  r.data = static_cast<char*>(v.data) + group * per_group * v.strides[1] * static_cast<int64_t>(itemsize(v.dtype));
  return r;
}

// A dense [Cout/groups, N * Ho * Wo] GEMM operand seen as [N, Cout/groups, Ho, Wo].
View as_nchw(const View& rows_by_batch, const ConvGeometry& g) {
  const int64_t pixels = g.ho * g.wo, width = g.n * pixels;
  View r = rows_by_batch;
  r.shape = {g.n, rows_by_batch.shape[0], g.ho, g.wo};
  r.strides = {pixels, width, g.wo, 1};
  return r;
}

// Group `group`'s weights [Cout/groups, K] of a dense [Cout, Cin/groups, kH, kW] weight.
View group_weight(const View& dense_weight, const ConvGeometry& g, int64_t group) {
  const size_t offset = static_cast<size_t>(group * g.weight_group_elems()) * itemsize(dense_weight.dtype);
  return matrix(dense_weight.data, offset, dense_weight.dtype, g.cout_per_group(), g.col_rows(),
                dense_weight.device_index);
}

// grad_out's channels of one group at a time as the dense GEMM operand
// dy_g [Cout/groups, N * Ho * Wo] (both backward passes start from it).
class GroupGradOut {
 public:
  GroupGradOut(CudaRuntime& b, const View& grad_out, const ConvGeometry& g, DType dtype)
      : b_(b),
        grad_out_(grad_out),
        g_(g),
        cout_g_(g.cout_per_group()),
        storage_(b, grad_out.device_index, static_cast<size_t>(cout_g_ * g.n * g.ho * g.wo) * itemsize(dtype)),
        matrix_(matrix(storage_.get(), 0, dtype, cout_g_, g.n * g.ho * g.wo, grad_out.device_index)) {}
  const View& load(int64_t group) {
    b_.copy(as_nchw(matrix_, g_), group_channels(grad_out_, cout_g_, group));
    return matrix_;
  }

 private:
  CudaRuntime& b_;
  const View& grad_out_;
  const ConvGeometry& g_;
  int64_t cout_g_;
  Scratch storage_;
  View matrix_;
};

}  // namespace

void conv2d_im2col(CudaRuntime& b, const View& out, const View& in, const View& weight, const View* bias,
                   const Conv2dParams& p) {
  const ConvGeometry g = shapes::conv_geometry(in.shape, weight.shape, out.shape, bias, p);
  const DType dtype = out.dtype;
  check_dtypes("conv2d", dtype, {&in, &weight});
  const int device = out.device_index;
  DeviceGuard guard(device);
  if (out.numel() == 0) return;
  const int64_t k = g.col_rows(), width = g.n * g.ho * g.wo, cout_g = g.cout_per_group();
  const size_t item = itemsize(dtype);
  DenseArg x(b, in, dtype, DenseArg::In), w(b, weight, dtype, DenseArg::In);
  Scratch cols(b, device, static_cast<size_t>(k * width) * item);
  Scratch result(b, device, static_cast<size_t>(cout_g * width) * item);
  const View cols_m = matrix(cols.get(), 0, dtype, k, width, device);
  const View result_m = matrix(result.get(), 0, dtype, cout_g, width, device);
  for (int64_t group = 0; group < g.groups; ++group) {
    im2col(dtype, cols.get(), x.view().data, g, group, b.stream(device));
    kernel_for<kernel::Matmul>(b.type())(result_m, group_weight(w.view(), g, group), cols_m, MatmulParams{});
    b.copy(group_channels(out, cout_g, group), as_nchw(result_m, g));
  }
  if (bias) add_conv_bias(b, out, *bias);
}

void add_conv_bias(CudaRuntime& b, const View& out, const View& bias) {
  View row = bias;
  row.shape = out.shape;
  row.strides = {0, bias.strides[0], 0, 0};
  kernel_for<kernel::Binary>(b.type())(BinaryOp::Add, out, out, row);
}

void conv2d_backward_input_im2col(CudaRuntime& b, const View& grad_in, const View& grad_out, const View& weight,
                                  const Conv2dParams& p) {
  const char* op = "conv2d_backward_input";
  const ConvGeometry g = shapes::conv_geometry(op, grad_in.shape, weight.shape, grad_out.shape, p);
  const DType dtype = grad_in.dtype;
  check_dtypes(op, dtype, {&grad_out, &weight});
  const int device = grad_in.device_index;
  DeviceGuard guard(device);
  if (grad_in.numel() == 0) return;
  const int64_t k = g.col_rows(), width = g.n * g.ho * g.wo, cout_g = g.cout_per_group();
  if (width == 0 || cout_g == 0) {  // no outputs, or none per group: nothing flows back
    kernel_for<kernel::Fill>(b.type())(grad_in, Scalar(0.0));
    return;
  }
  const size_t item = itemsize(dtype);
  DenseArg w(b, weight, dtype, DenseArg::In), dx(b, grad_in, dtype, DenseArg::Out);
  GroupGradOut dy(b, grad_out, g, dtype);
  Scratch dcols(b, device, static_cast<size_t>(k * width) * item);
  const View dcols_m = matrix(dcols.get(), 0, dtype, k, width, device);
  for (int64_t group = 0; group < g.groups; ++group) {
    View w_t = group_weight(w.view(), g, group);  // W_g^T: the same memory read column-major
    w_t.shape = {k, cout_g};
    w_t.strides = {1, k};
    kernel_for<kernel::Matmul>(b.type())(dcols_m, w_t, dy.load(group), MatmulParams{});
    col2im(dtype, dx.view().data, dcols.get(), g, group, b.stream(device));
  }
  dx.commit();
}

void conv2d_backward_weight_im2col(CudaRuntime& b, const View& grad_weight, const View& grad_out, const View& in,
                                   const Conv2dParams& p) {
  const char* op = "conv2d_backward_weight";
  const ConvGeometry g = shapes::conv_geometry(op, in.shape, grad_weight.shape, grad_out.shape, p);
  const DType dtype = grad_weight.dtype;
  check_dtypes(op, dtype, {&grad_out, &in});
  const int device = grad_weight.device_index;
  DeviceGuard guard(device);
  if (grad_weight.numel() == 0) return;
  const int64_t k = g.col_rows(), width = g.n * g.ho * g.wo;
  if (width == 0) {  // an empty batch (or output) contributes nothing
    kernel_for<kernel::Fill>(b.type())(grad_weight, Scalar(0.0));
    return;
  }
  const size_t item = itemsize(dtype);
  DenseArg x(b, in, dtype, DenseArg::In), dw(b, grad_weight, dtype, DenseArg::Out);
  GroupGradOut dy(b, grad_out, g, dtype);
  Scratch cols(b, device, static_cast<size_t>(k * width) * item);
  View cols_t = matrix(cols.get(), 0, dtype, width, k, device);
  cols_t.strides = {1, width};  // cols^T
  for (int64_t group = 0; group < g.groups; ++group) {
    im2col(dtype, cols.get(), x.view().data, g, group, b.stream(device));
    kernel_for<kernel::Matmul>(b.type())(group_weight(dw.view(), g, group), dy.load(group), cols_t, MatmulParams{});
  }
  dw.commit();
}

}  // namespace anvil::cuda
