#pragma once
// Matrix products and dense factorizations (BLAS/LAPACK on the CPU,
// cuBLASLt/cuSOLVER or the hand-written GEMMs on CUDA).
#include "kernels/kernel_registry.h"
#include "kernels/ops/table_kernels.h"
#include "kernels/view.h"

namespace anvil {

struct MatmulParams {
  float alpha = 1.0f;
  float beta = 0.0f;
};  // out = alpha*a@b + beta*out

namespace kernel {

// a [B, M, K], b [B, K, N], out [B, M, N]; any strides, batch strides of a or
// b may be 0 (broadcast).
struct Matmul {
  static constexpr const char* name = "matmul";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& a, const View& b, const MatmulParams& p);
};

// The linear layer: out [rows, out_f] = in [rows, in_f] @ weight^T + bias,
// weight [out_f, in_f], bias [out_f] or null. Without a kernel, core runs
// matmul and a broadcast add; the CUDA kernel fuses the bias into the GEMM's
// epilogue.
struct Linear {
  static constexpr const char* name = "linear";
  static constexpr bool has_fallback = true;
  using Signature = void(const View& out, const View& in, const View& weight, const View* bias);
};

// Dense factorizations of float32 or float64 matrices [B, n, n] stored as
// LAPACK stores them, column-major: strides {n*n, 1, n}
// (kernels/shapes/linalg_checks.h checks them).
//
// LU with partial pivoting (getrf), in place: a becomes L (unit diagonal, not
// stored) below the diagonal and U on and above it. pivots [B, n] int32 are
// LAPACK's 1-based row swaps; info [B] int32 is 0, or k > 0 when U[k-1][k-1]
// is exactly zero (a singular matrix; the factors are still written). On a
// GPU, info stays on the device: reading it synchronizes.
struct LuFactor {
  static constexpr const char* name = "lu_factor";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& a, const View& pivots, const View& info);
};

// Solves A x = b from lu_factor's factors (getrs): b [B, n, k], column-major
// {n*k, 1, n}, is overwritten with x.
struct LuSolve {
  static constexpr const char* name = "lu_solve";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& lu, const View& pivots, const View& b);
};

// Reduced SVD A = U diag(S) V^T (gesdd on the CPU, gesvdj on CUDA) of a
// [B, m, n], whose contents it destroys; k = min(m, n). s [B, k] contiguous
// gets the singular values, descending. u [B, m, k] and v [B, n, k],
// column-major, get the singular vectors, or are both null for the values
// alone. V rather than V^T: gesvdj and a one-sided Jacobi produce it, and V
// column-major is V^T row-major, what the op returns. info [B] int32 is 0,
// or > 0 where the iteration did not converge.
struct Svd {
  static constexpr const char* name = "svd";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& a, const View& s, const View* u, const View* v, const View& info);
};

}  // namespace kernel

// linear as a matmul with weight^T, then the bias as a broadcast add, on
// `device`'s kernels: core's fallback where no linear kernel is registered,
// and what a linear kernel runs for the layouts it does not fuse.
inline void linear_as_matmul(DeviceType device, const View& out, const View& in, const View& weight, const View* bias) {
  View weight_t = weight;
  weight_t.shape = {weight.shape[1], weight.shape[0]};
  weight_t.strides = {weight.strides[1], weight.strides[0]};
  kernel_for<kernel::Matmul>(device)(out, in, weight_t, MatmulParams{});
  if (bias) {
    View row = *bias;
    row.shape = out.shape;
    row.strides = {0, bias->strides[0]};
    kernel_for<kernel::Binary>(device)(BinaryOp::Add, out, out, row);
  }
}

}  // namespace anvil
