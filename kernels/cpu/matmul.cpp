// Batched matmul through cpu::gemm (gemm.h). Each operand is handed to BLAS in place when
// its 2-D slices have a unit stride in one of the two matrix dims (row-major
// or transposed); anything else (expanded inner dims, other dtypes) is made
// dense first. float16/bfloat16 are computed in float32.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "kernels/cpu/blas_threads.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/linalg_kernels.h"
#include "kernels/cpu/dense_buffer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/onednn_linear.h"
#include "kernels/cpu/parallel_if.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/shapes/matmul_checks.h"

namespace anvil::cpu {

namespace {

// How BLAS reads a rows x cols matrix in place: transposed or not, and the
// leading dimension. Size-1 dims put no constraint on their stride.
struct BlasLayout {
  bool trans = false;
  int64_t ld = 1;
};

std::optional<BlasLayout> blas_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  const int64_t min_row_ld = std::max<int64_t>(cols, 1), min_col_ld = std::max<int64_t>(rows, 1);
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= min_row_ld))
    return BlasLayout{false, rows == 1 ? min_row_ld : row_stride};
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= min_col_ld))
    return BlasLayout{true, cols == 1 ? min_col_ld : col_stride};
  return std::nullopt;
}

using shapes::transposed;

// One read-only operand as BLAS will see it: borrowed when possible,
// otherwise a dense copy (one slice when the batch is broadcast).
template <typename T> struct Operand {
  const T* data = nullptr;
  int64_t batch_stride = 0;
  BlasLayout layout;
  std::vector<T> storage;
};

template <typename T> Operand<T> prepare_operand(const View& v) {
  Operand<T> op;
  const int64_t rows = v.shape[1], cols = v.shape[2];
  if (v.dtype == dtype_of<T>::value) {
    if (auto layout = blas_layout(rows, cols, v.strides[1], v.strides[2])) {
      op.data = v.ptr<T>();
      op.batch_stride = v.shape[0] == 1 ? 0 : v.strides[0];
      op.layout = *layout;
      return op;
    }
  }
  View src = v;
  const bool broadcast = v.shape[0] == 1 || v.strides[0] == 0;
  if (broadcast) src.shape[0] = 1;
  op.storage = dense_copy<T>(src);
  op.data = op.storage.data();
  op.batch_stride = broadcast ? 0 : rows * cols;
  op.layout = BlasLayout{false, std::max<int64_t>(cols, 1)};
  return op;
}

// Multiply-adds up to which one product of a batch runs on one thread.
constexpr int64_t kSmallGemmMacs = int64_t{1} << 21;

// out (row-major, unit column stride, leading dim ldc) = alpha * a @ b + beta * out.
template <typename T>
void batched_gemm(T* out, int64_t out_batch_stride, int64_t ldc, const View& a_view, const View& b_view,
                  const MatmulParams& p) {
  const int64_t batch = a_view.shape[0], m = a_view.shape[1], k = a_view.shape[2], n = b_view.shape[2];
  const Operand<T> a = prepare_operand<T>(a_view);
  const Operand<T> b = prepare_operand<T>(b_view);
  // A weight shared by the whole batch, with batch-contiguous rows of a and
  // out, is one tall GEMM instead of `batch` small ones.
  const bool foldable = batch > 1 && b.batch_stride == 0 && !a.layout.trans && a.batch_stride == m * a.layout.ld &&
                        out_batch_stride == m * ldc;
  if (foldable) {
    gemm(false, b.layout.trans, batch * m, n, k, p.alpha, a.data, a.layout.ld, b.data, b.layout.ld, p.beta, out, ldc);
    return;
  }
  // Small products (attention's per-head scores) are spread over OpenMP
  // threads, one single-threaded GEMM each: one call is too short for the
  // library to split it profitably. Large ones use the library's threads.
  const bool spread_batch = batch > 1 && m * n * k <= kSmallGemmMacs && use_openmp_beside_blas();
  parallel_if(spread_batch, [&] {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < batch; ++i) {
      gemm(a.layout.trans, b.layout.trans, m, n, k, p.alpha, a.data + i * a.batch_stride, a.layout.ld,
           b.data + i * b.batch_stride, b.layout.ld, p.beta, out + i * out_batch_stride, ldc);
    }
  });
}

// out = beta * out: the whole result when the inner dimension is empty.
template <typename T> void scale_output(const View& out, float beta) {
  DenseOut<T> o(out, beta == 0.0f ? OutStart::Unspecified : OutStart::CurrentValues);
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) o[i] = beta == 0.0f ? T(0) : static_cast<T>(beta * o[i]);
  o.commit();
}

template <typename T> void matmul_typed(const View& out, const View& a, const View& b, const MatmulParams& p) {
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {
    scale_output<T>(out, p.beta);
    return;
  }
  const bool batches_disjoint = batch == 1 || out.strides[0] != 0;
  if (out.dtype == dtype_of<T>::value && batches_disjoint) {
    if (auto layout = blas_layout(m, n, out.strides[1], out.strides[2])) {
      const int64_t out_batch_stride = batch == 1 ? 0 : out.strides[0];
      if (!layout->trans) {
        batched_gemm<T>(out.ptr<T>(), out_batch_stride, layout->ld, a, b, p);
      } else {
        // A column-major out is out^T row-major, and out^T = b^T @ a^T.
        batched_gemm<T>(out.ptr<T>(), out_batch_stride, layout->ld, transposed(b), transposed(a), p);
      }
      return;
    }
  }
  DenseOut<T> dense(out, p.beta == 0.0f ? OutStart::Unspecified : OutStart::CurrentValues);
  batched_gemm<T>(dense.get(), m * n, n, a, b, p);
  dense.commit();
}

// out [rows, n] row-major (unit column stride) = bias in every row.
template <typename T> void fill_rows_with(const View& out, const View& bias) {
  const int64_t rows = out.shape[0], n = out.shape[1], ld = out.strides[0];
  std::vector<T> row(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] = bias.ptr<T>()[j * bias.strides[0]];
  T* o = out.ptr<T>();
  parallel_for(rows, rows * n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) std::copy(row.begin(), row.end(), o + r * ld);
  });
}

}  // namespace

// float32 row-major operands go to oneDNN's matmul primitive, the bias in its
// epilogue (onednn_linear.h). Otherwise the bias goes into every row of out
// first and the GEMM adds the product onto it (beta = 1), as BLAS-backed addmm
// does: one streaming write of out instead of the default's broadcast add,
// which reads and writes out again through the strided elementwise loop.
void matmul(const View& out_in, const View& a_in, const View& b_in, const MatmulParams& p);  // below

void linear(const View& out, const View& in, const View& weight, const View* bias) {
  const auto row_major = [](const View& v) { return v.dim() == 2 && v.strides[1] == 1 && v.strides[0] >= v.shape[1]; };
  if (out.dtype == DType::Float32 && in.dtype == out.dtype && weight.dtype == out.dtype &&
      (bias == nullptr || (bias->dtype == out.dtype && bias->dim() == 1 && bias->strides[0] == 1)) && row_major(out) &&
      row_major(in) && row_major(weight)) {
    const onednn::LinearShape s{in.shape[0],   in.shape[1],       out.shape[1],
                                in.strides[0], weight.strides[0], out.strides[0]};
    if (onednn::linear_runs_on_onednn(s))
      return onednn::linear_forward(out.ptr<float>(), in.ptr<float>(), weight.ptr<float>(),
                                    bias ? bias->ptr<float>() : nullptr, s);
  }
  const bool prefill = bias != nullptr && (out.dtype == DType::Float32 || out.dtype == DType::Float64) &&
                       out.dtype == bias->dtype && in.dtype == out.dtype && weight.dtype == out.dtype &&
                       row_major(out) && bias->dim() == 1 && bias->shape[0] == out.shape[1];
  if (!prefill) return linear_as_matmul(DeviceType::CPU, out, in, weight, bias);
  if (out.dtype == DType::Float32)
    fill_rows_with<float>(out, *bias);
  else
    fill_rows_with<double>(out, *bias);
  View weight_t = weight;
  weight_t.shape = {weight.shape[1], weight.shape[0]};
  weight_t.strides = {weight.strides[1], weight.strides[0]};
  matmul(out, in, weight_t, MatmulParams{1.0f, 1.0f});
}

void matmul(const View& out_in, const View& a_in, const View& b_in, const MatmulParams& p) {
  const shapes::BatchedMatmul m = shapes::check_matmul(out_in, a_in, b_in);
  const View &out = m.out, &a = m.a, &b = m.b;
  switch (out.dtype) {
    case DType::Float64:
      matmul_typed<double>(out, a, b, p);
      return;
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16:
      matmul_typed<float>(out, a, b, p);
      return;
    default:
      fail("matmul: dtype ", dtype_name(out.dtype),
           " is not supported on CPU (floating dtypes only: float32, float64, float16, bfloat16)");
  }
}

ANVIL_REGISTER_KERNEL(kernel::Matmul, CPU, matmul);
ANVIL_REGISTER_KERNEL(kernel::Linear, CPU, linear);

}  // namespace anvil::cpu
