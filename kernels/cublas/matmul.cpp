// kernel::Matmul (and the fused linear) through cuBLASLt.
//
// cuBLAS is column-major; our views are row-major-indexed. A row-major
// out [M, N] is the column-major matrix out^T [N, M], and out^T = b^T @ a^T,
// so cuBLASLt computes D = op(A) @ op(B) with A taken from b and B from a.
// Each operand is handed over in place when its matrix dims have a unit
// stride in one of them (a transposed view becomes op T); anything else
// (expanded inner dims, a dtype other than out's) is first made dense with
// the backend's strided copy. A column-major out is handled as out^T = b^T a^T.
//
// Types: float32 (exact float32 math unless set_matmul_allow_tf32(true)),
// float16 and bfloat16 (float32 accumulation and alpha/beta), float64.
// The algorithm for a (shape, strides, alignment, dtype, epilogue) is asked
// of the heuristic once and cached; its workspace comes from the caching
// allocator on the current stream.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "kernels/cublas/cublas_handles.h"
#include "kernels/cuda/launch/algo_cache.h"
#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/linalg_kernels.h"
#include "kernels/cuda/gemm/ladder_matmul.h"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/cuda/launch/scratch.h"
#include "kernels/matmul_settings.h"
#include "kernels/shapes/matmul_checks.h"

namespace anvil::cuda {
namespace {

// Upper bound on the workspace an algorithm may ask for (NVIDIA suggests
// 32 MiB on Hopper); the allocator caches it, so repeated calls are free.
constexpr size_t kMaxWorkspaceBytes = size_t{32} << 20;

using shapes::as_batched;
using shapes::transposed;

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::Float32:
      return CUDA_R_32F;
    case DType::Float64:
      return CUDA_R_64F;
    case DType::Float16:
      return CUDA_R_16F;
    case DType::BFloat16:
      return CUDA_R_16BF;
    default:
      fail("matmul: dtype ", dtype_name(t),
           " is not supported on CUDA (floating dtypes only: float32, float64, float16, bfloat16)");
  }
}

// How cuBLASLt reads the transpose X^T of a row-major-indexed X [rows, cols]
// (strides sr, sc): either X^T is stored column-major (op N, a unit column
// stride) or X itself is (op T, a unit row stride). Size-1 dims put no
// constraint on their stride.
struct LtMatrix {
  cublasOperation_t op = CUBLAS_OP_N;
  uint64_t stored_rows = 0, stored_cols = 0;  // of the column-major matrix in memory
  int64_t ld = 1;
};

std::optional<LtMatrix> lt_matrix_of_transpose(int64_t rows, int64_t cols, int64_t sr, int64_t sc) {
  const int64_t min_row_ld = std::max<int64_t>(cols, 1), min_col_ld = std::max<int64_t>(rows, 1);
  if ((sc == 1 || cols == 1) && (rows == 1 || sr >= min_row_ld)) {
    return LtMatrix{CUBLAS_OP_N, static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), rows == 1 ? min_row_ld : sr};
  }
  if ((sr == 1 || rows == 1) && (cols == 1 || sc >= min_col_ld)) {
    return LtMatrix{CUBLAS_OP_T, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), cols == 1 ? min_col_ld : sc};
  }
  return std::nullopt;
}

// One read-only operand as cuBLASLt will see it: in place, or a dense copy
// (a single slice when the batch is broadcast).
struct LtOperand {
  const void* data = nullptr;
  LtMatrix m;
  int64_t batch_stride = 0;
  DenseBuffer storage;
};

LtOperand prepare_operand(CudaRuntime& backend, const View& v, DType dtype) {
  LtOperand op;
  const int64_t rows = v.shape[1], cols = v.shape[2];
  if (v.dtype == dtype) {
    if (auto m = lt_matrix_of_transpose(rows, cols, v.strides[1], v.strides[2])) {
      op.data = v.data;
      op.m = *m;
      op.batch_stride = v.shape[0] == 1 ? 0 : v.strides[0];
      return op;
    }
  }
  View src = v;
  const bool broadcast = v.shape[0] == 1 || v.strides[0] == 0;
  if (broadcast) src.shape[0] = 1;
  op.storage = dense_copy(backend, src, dtype);
  op.data = op.storage.view.data;
  op.m = *lt_matrix_of_transpose(rows, cols, std::max<int64_t>(cols, 1), 1);
  op.batch_stride = broadcast ? 0 : rows * cols;
  return op;
}

// Largest power of two (up to 256) dividing every byte offset the kernel
// derives from this operand: cuBLASLt picks vectorised kernels by it.
uint32_t alignment_bytes(const void* ptr, int64_t ld, int64_t batch_stride, size_t elem) {
  uint64_t bits = reinterpret_cast<uintptr_t>(ptr) | 256u;
  bits |= static_cast<uint64_t>(ld) * elem;
  if (batch_stride != 0) bits |= static_cast<uint64_t>(batch_stride) * elem;
  return static_cast<uint32_t>(bits & (~bits + 1));  // lowest set bit
}

// RAII for the cuBLASLt descriptors of one call.
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  LtDescriptors() = default;
  LtDescriptors(const LtDescriptors&) = delete;
  LtDescriptors& operator=(const LtDescriptors&) = delete;
  ~LtDescriptors() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

template <typename T> void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& value) {
  ANVIL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof(value)));
}

template <typename T> void set_layout(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t attr, const T& value) {
  ANVIL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, attr, &value, sizeof(value)));
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, uint64_t rows, uint64_t cols, int64_t ld, int32_t batch,
                                   int64_t batch_stride) {
  cublasLtMatrixLayout_t l = nullptr;
  ANVIL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
  if (batch > 1) {
    set_layout(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch);
    set_layout(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, batch_stride);
  }
  return l;
}

// The heuristic's choice per problem, shared by all threads.
struct AlgoChoice {
  cublasLtMatmulAlgo_t algo;
  size_t workspace = 0;
};

AlgoCache<AlgoChoice>& algo_cache() {
  static AlgoCache<AlgoChoice> cache;
  return cache;
}

// The problem in cuBLASLt's terms: D [n, m] (column-major, = out^T) =
// alpha * op(A) [n, k] @ op(B) [k, m] + beta * D, `batch` times.
struct LtProblem {
  DType dtype;
  int64_t m, n, k;
  int32_t batch;
  LtOperand A, B;  // A from b, B from a
  void* d = nullptr;
  int64_t ldd = 1, d_batch_stride = 0;
  float alpha = 1, beta = 0;
  const void* bias = nullptr;  // [n], the epilogue adds bias[row of D]
  DType bias_dtype = DType::Float32;
};

void run_lt(CudaRuntime& backend, int device, const LtProblem& pr) {
  const cudaDataType_t type = cuda_type(pr.dtype);
  const bool f64 = pr.dtype == DType::Float64;
  const bool tf32 = pr.dtype == DType::Float32 && matmul_allow_tf32();
  const cublasComputeType_t compute =
      f64 ? CUBLAS_COMPUTE_64F : (tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
  const cudaDataType_t scale_type = f64 ? CUDA_R_64F : CUDA_R_32F;
  const size_t elem = itemsize(pr.dtype);

  LtDescriptors desc;
  ANVIL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc.op, compute, scale_type));
  set_desc(desc.op, CUBLASLT_MATMUL_DESC_TRANSA, pr.A.m.op);
  set_desc(desc.op, CUBLASLT_MATMUL_DESC_TRANSB, pr.B.m.op);
  if (pr.bias) {
    set_desc(desc.op, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
    set_desc(desc.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, pr.bias);
    set_desc(desc.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(pr.bias_dtype));
  }
  desc.a = make_layout(type, pr.A.m.stored_rows, pr.A.m.stored_cols, pr.A.m.ld, pr.batch, pr.A.batch_stride);
  desc.b = make_layout(type, pr.B.m.stored_rows, pr.B.m.stored_cols, pr.B.m.ld, pr.batch, pr.B.batch_stride);
  desc.d =
      make_layout(type, static_cast<uint64_t>(pr.n), static_cast<uint64_t>(pr.m), pr.ldd, pr.batch, pr.d_batch_stride);

  const uint32_t align_a = alignment_bytes(pr.A.data, pr.A.m.ld, pr.A.batch_stride, elem);
  const uint32_t align_b = alignment_bytes(pr.B.data, pr.B.m.ld, pr.B.batch_stride, elem);
  const uint32_t align_d = alignment_bytes(pr.d, pr.ldd, pr.d_batch_stride, elem);
  const uint32_t align_bias = pr.bias ? alignment_bytes(pr.bias, 0, 0, 1) : 256;
  const std::vector<int64_t> key = {device,
                                    static_cast<int64_t>(pr.dtype),
                                    tf32,
                                    pr.m,
                                    pr.n,
                                    pr.k,
                                    pr.batch,
                                    pr.A.m.op,
                                    pr.B.m.op,
                                    pr.A.m.ld,
                                    pr.B.m.ld,
                                    pr.ldd,
                                    pr.A.batch_stride,
                                    pr.B.batch_stride,
                                    pr.d_batch_stride,
                                    align_a,
                                    align_b,
                                    align_d,
                                    pr.bias != nullptr,
                                    static_cast<int64_t>(pr.bias_dtype),
                                    align_bias,
                                    pr.beta != 0.0f};
  std::optional<AlgoChoice> choice = algo_cache().find(key);
  cublasLtHandle_t handle = cublaslt_handle(device);
  if (!choice) {
    ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&desc.pref));
    const uint64_t max_ws = kMaxWorkspaceBytes;
    auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, const auto& value) {
      ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(desc.pref, attr, &value, sizeof(value)));
    };
    set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_ws);
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a);
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b);
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_d);
    set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_d);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    ANVIL_CUBLAS_CHECK(
        cublasLtMatmulAlgoGetHeuristic(handle, desc.op, desc.a, desc.b, desc.d, desc.d, desc.pref, 1, &result, &found));
    ANVIL_CHECK(found > 0 && result.state == CUBLAS_STATUS_SUCCESS, "matmul: cuBLASLt has no algorithm for ",
                dtype_name(pr.dtype), " [", pr.batch, " x ", pr.m, " x ", pr.k, "] @ [", pr.k, " x ", pr.n,
                "] with leading dims ", pr.A.m.ld, ", ", pr.B.m.ld, ", ", pr.ldd);
    choice = AlgoChoice{result.algo, result.workspaceSize};
    algo_cache().insert(key, *choice);
  }

  Scratch workspace(backend, device, choice->workspace);
  const double alpha64 = pr.alpha, beta64 = pr.beta;
  const void* alpha = f64 ? static_cast<const void*>(&alpha64) : static_cast<const void*>(&pr.alpha);
  const void* beta = f64 ? static_cast<const void*>(&beta64) : static_cast<const void*>(&pr.beta);
  ANVIL_CUBLAS_CHECK(cublasLtMatmul(handle, desc.op, alpha, pr.A.data, desc.a, pr.B.data, desc.b, beta, pr.d, desc.d,
                                    pr.d, desc.d, &choice->algo, workspace.get(), choice->workspace,
                                    backend.stream(device)));
}

// out = beta * out for an empty inner dimension (nothing to multiply).
void scale_output(CudaRuntime& backend, const View& out, float beta) {
  if (beta == 1.0f) return;
  if (beta == 0.0f) {
    kernel_for<kernel::Fill>(backend.type())(out, Scalar(0.0));
    return;
  }
  DenseBuffer factor = dense_buffer(backend, out.device_index, out.dtype, {1});
  kernel_for<kernel::Fill>(backend.type())(factor.view, Scalar(static_cast<double>(beta)));
  View broadcast = factor.view;
  broadcast.shape = out.shape;
  broadcast.strides.assign(out.shape.size(), 0);
  kernel_for<kernel::Binary>(backend.type())(BinaryOp::Mul, out, out, broadcast);
}

// out (3-D, out.dtype == dtype, writable in place as out^T column-major with
// disjoint batches) = alpha * a @ b + beta * out (+ bias[col]).
void matmul_in_place(CudaRuntime& backend, const View& out, const View& a, const View& b, const MatmulParams& p,
                     const LtMatrix& out_m, const View* bias) {
  const int device = out.device_index;
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2], k = a.shape[2];
  ANVIL_CHECK(batch <= INT32_MAX, "matmul: batch ", batch, " is too large for cuBLASLt");
  LtProblem pr;
  pr.dtype = out.dtype;
  pr.m = m;
  pr.n = n;
  pr.k = k;
  pr.batch = static_cast<int32_t>(batch);
  pr.A = prepare_operand(backend, b, out.dtype);
  pr.B = prepare_operand(backend, a, out.dtype);
  pr.d = out.data;
  pr.ldd = out_m.ld;
  pr.d_batch_stride = batch == 1 ? 0 : out.strides[0];
  pr.alpha = p.alpha;
  pr.beta = p.beta;
  DenseBuffer bias_storage;
  if (bias) {
    if (bias->strides[0] != 1 && bias->shape[0] != 1) {
      bias_storage = dense_copy(backend, *bias, bias->dtype);
      pr.bias = bias_storage.view.data;
    } else {
      pr.bias = bias->data;
    }
    pr.bias_dtype = bias->dtype;
  }
  // A weight shared by the whole batch with batch-contiguous rows of a and
  // out is one tall GEMM (M' = batch * M) instead of a strided batch.
  if (batch > 1 && pr.A.batch_stride == 0 && pr.B.m.op == CUBLAS_OP_N && pr.B.batch_stride == m * pr.B.m.ld &&
      pr.d_batch_stride == m * pr.ldd) {
    pr.m = batch * m;
    pr.batch = 1;
    pr.B.m.stored_cols = static_cast<uint64_t>(batch * m);
    pr.B.batch_stride = 0;
    pr.d_batch_stride = 0;
  }
  run_lt(backend, device, pr);
}

// The general entry: picks in-place, transposed or dense-temp output.
void matmul_any(CudaRuntime& backend, const View& out, const View& a, const View& b, const MatmulParams& p,
                const View* bias) {
  const int64_t batch = out.shape[0], m = out.shape[1], n = out.shape[2];
  const bool batches_disjoint = batch == 1 || out.strides[0] != 0;
  if (batches_disjoint && is_floating(out.dtype)) {
    if (auto om = lt_matrix_of_transpose(m, n, out.strides[1], out.strides[2]); om && om->op == CUBLAS_OP_N) {
      matmul_in_place(backend, out, a, b, p, *om, bias);
      return;
    }
    if (!bias) {
      // A column-major out is out^T row-major, and out^T = b^T @ a^T.
      const View out_t = transposed(out);
      if (auto om = lt_matrix_of_transpose(n, m, out_t.strides[1], out_t.strides[2]); om && om->op == CUBLAS_OP_N) {
        matmul_in_place(backend, out_t, transposed(b), transposed(a), p, *om, nullptr);
        return;
      }
    }
  }
  // Anything else (an expanded or oddly strided out): compute into a dense
  // temp and copy back.
  DenseBuffer dense = p.beta == 0.0f ? dense_buffer(backend, out.device_index, out.dtype, out.shape)
                                     : dense_copy(backend, out, out.dtype);
  const LtMatrix om = *lt_matrix_of_transpose(m, n, std::max<int64_t>(n, 1), 1);
  matmul_in_place(backend, dense.view, a, b, p, om, bias);
  backend.copy(out, dense.view);
}

}  // namespace

void matmul(const View& out_in, const View& a_in, const View& b_in, const MatmulParams& p) {
  ANVIL_NVTX_RANGE("matmul");
  const shapes::BatchedMatmul m = shapes::check_matmul(out_in, a_in, b_in);  // the CPU's checks and messages
  const View &out = m.out, &a = m.a, &b = m.b;
  cuda_type(out.dtype);  // rejects non-floating dtypes with a clear message
  DeviceGuard guard(out.device_index);
  if (out.shape[0] == 0 || out.shape[1] == 0 || out.shape[2] == 0) return;
  if (a.shape[2] == 0) {
    scale_output(cuda_runtime(), out, p.beta);
    return;
  }
  if (matmul_use_gemm_ladder() && a.dtype == out.dtype && b.dtype == out.dtype &&
      gemm::ladder_matmul(out, a, b, p, stream(out.device_index)))
    return;
  matmul_any(cuda_runtime(), out, a, b, p, nullptr);
}

void linear(const View& out, const View& in, const View& weight, const View* bias) {
  // out [rows, out_f] = in [rows, in_f] @ weight^T (+ bias in the epilogue):
  // weight [out_f, in_f] is read transposed in place.
  ANVIL_NVTX_RANGE("linear");
  CudaRuntime& backend = cuda_runtime();
  ANVIL_CHECK(in.dim() == 2 && weight.dim() == 2 && out.dim() == 2 && in.shape[1] == weight.shape[1] &&
                  out.shape[0] == in.shape[0] && out.shape[1] == weight.shape[0],
              "linear: expected in [rows, in_features], weight [out_features, in_features], out [rows, ",
              "out_features], got in ", in.shape, ", weight ", weight.shape, ", out ", out.shape);
  ANVIL_CHECK(!bias || (bias->dim() == 1 && bias->shape[0] == out.shape[1]), "linear: expected bias [", out.shape[1],
              "], got ", bias ? bias->shape : Shape{});
  cuda_type(out.dtype);
  DeviceGuard guard(out.device_index);
  if (out.numel() == 0) return;
  View w_t = weight;
  std::swap(w_t.shape[0], w_t.shape[1]);
  std::swap(w_t.strides[0], w_t.strides[1]);
  const View o = as_batched(out), a = as_batched(in), b = as_batched(w_t);
  MatmulParams p;
  if (in.shape[1] == 0) {
    // No inner dim: out = bias (or 0), broadcast over the rows.
    if (!bias) {
      kernel_for<kernel::Fill>(backend.type())(out, Scalar(0.0));
    } else {
      View bb = *bias;
      bb.shape = out.shape;
      bb.strides = {0, bias->strides[0]};
      backend.copy(out, bb);
    }
    return;
  }
  // The bias epilogue is used for a bias in out's dtype (float64 GEMMs have
  // no epilogues); other cases add it separately.
  const bool fusable = !bias || (bias->dtype == out.dtype && out.dtype != DType::Float64);
  matmul_any(backend, o, a, b, p, fusable ? bias : nullptr);
  if (bias && !fusable) {
    View bb = *bias;
    bb.shape = out.shape;
    bb.strides = {0, bias->strides[0]};
    kernel_for<kernel::Binary>(backend.type())(BinaryOp::Add, out, out, bb);
  }
}

ANVIL_REGISTER_KERNEL(kernel::Matmul, CUDA, matmul);
ANVIL_REGISTER_KERNEL(kernel::Linear, CUDA, linear);

}  // namespace anvil::cuda
