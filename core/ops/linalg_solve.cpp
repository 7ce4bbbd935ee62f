// torch.linalg's LU-based ops: solve, inv, det, slogdet. Each factors
// column-major copies of A with the backend's lu_factor (LAPACK getrf on the
// CPU, cuSOLVER on CUDA) and, for solve and inv, solves with lu_solve.
// Gradients are PyTorch's formulas written with anvil ops, so they are
// themselves differentiable.
#include <cmath>
#include <string>
#include <vector>

#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/linalg.h"
#include "core/ops/linalg_lapack.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"

namespace anvil::linalg {

using autograd::SavedTensor;
using Grads = std::vector<Tensor>;
using namespace detail_lapack;

namespace {

// A [*, n, n] of float32 or float64: what every op here needs.
void check_square(const char* op, const Tensor& A) {
  detail::check_defined(op, A, "A");
  ANVIL_CHECK(A.dim() >= 2, op, ": A must have at least 2 dimensions, got ", detail::describe(A));
  ANVIL_CHECK(A.size(-1) == A.size(-2), op, ": A must be batches of square matrices, but they are ", A.size(-2), " by ",
              A.size(-1), " matrices (", detail::describe(A), ")");
  ANVIL_CHECK(A.dtype() == kFloat32 || A.dtype() == kFloat64, op, ": expected A of dtype float32 or float64, got ",
              detail::describe(A));
}

// The LU factors of A broadcast to `batch`, kept for lu_solve and det.
struct LuFactors {
  Tensor storage;  // row-major [*batch, n, n] holding the factors column-major
  Tensor pivots;  // int32 [B, n]
  Tensor info;  // int32 [B]
  int64_t count = 0, n = 0;
  View view() const { return lapack_view(storage, count, n, n); }
};

LuFactors lu_factor(const Tensor& A, const Shape& batch) {
  LuFactors f;
  f.n = A.size(-1);
  f.count = numel_of(batch);
  f.storage = column_major_copy(A, batch);
  const TensorOptions ints = TensorOptions().dtype(kInt32).device(A.device());
  f.pivots = empty({f.count, f.n}, ints);
  f.info = empty({f.count}, ints);
  detail::kernel_of<kernel::LuFactor>(A)(f.view(), f.pivots.view_of(), f.info.view_of());
  return f;
}

// PyTorch's message for a singular input, naming the first singular batch
// element (the flat index over the broadcast batch dims) when A is batched.
void check_invertible(const char* op, const LuFactors& f, const Shape& batch) {
  const std::vector<int64_t> info = f.info.to_vector<int64_t>();
  for (size_t i = 0; i < info.size(); ++i) {
    if (info[i] == 0) continue;
    const std::string element = batch.empty() ? std::string() : "(Batch element " + std::to_string(i) + "): ";
    fail(op, ": ", element, "The solver failed because the input matrix is singular: U[", info[i] - 1, "][",
         info[i] - 1, "] of its LU factorization is exactly zero (batch dims ", batch, ", matrices ", f.n, "x", f.n,
         ")");
  }
}

// X = A^-1 B for A [*, n, n] and B [*, n, k] (batch dims broadcast), no autograd.
Tensor solve_matrices(const char* op, const Tensor& A, const Tensor& B) {
  const Shape batch = broadcast_shapes(batch_of(A), batch_of(B), op);
  LuFactors f = lu_factor(A, batch);
  check_invertible(op, f, batch);
  const int64_t n = f.n, k = B.size(-1);
  Tensor x_storage = column_major_copy(B, batch);  // [*batch, k, n]
  if (f.count > 0 && n > 0 && k > 0)
    detail::kernel_of<kernel::LuSolve>(A)(f.view(), f.pivots.view_of(), lapack_view(x_storage, f.count, n, k));
  return transpose_matrices(x_storage);
}

// PyTorch's rule: B is a vector when it is 1-D, or A's shape without its
// last dim (a batch of vectors).
bool is_vector_rhs(const Tensor& A, const Tensor& B) {
  if (B.dim() == 1) return true;
  return B.dim() == A.dim() - 1 && B.shape() == Shape(A.shape().begin(), A.shape().end() - 1);
}

Tensor solve_impl(const char* op, const Tensor& A, const Tensor& B, bool vector_rhs) {
  const Tensor B2 = vector_rhs ? B.unsqueeze(-1) : B;
  ANVIL_CHECK(B2.dim() >= 2 && B2.size(-2) == A.size(-1), op,
              ": incompatible shapes of A and B for the equation AX = B: A ", A.shape(), " (", A.size(-2), "x",
              A.size(-1), " matrices) and B ", B.shape(), " (expected B of shape [*, ", A.size(-1), ", k], or [",
              A.size(-1), "])");
  const Tensor X2 = solve_matrices(op, A, B2);
  // A fresh handle over the result's storage, to record the backward on.
  Tensor X = vector_rhs ? X2.squeeze(-1) : X2;
  Tensor result = alias_with(X, X.shape(), X.strides(), X.offset());
  if (autograd::needs_grad({A, B}))
    autograd::record(op, {A, B}, result,
                     [sa = SavedTensor(A, op), sx = SavedTensor::output(result, op), vector_rhs, op,
                      a_shape = A.shape(), b2_shape = B2.shape(), b_shape = B.shape()](const Tensor& g) {
                       // gB = A^-T G, gA = -gB X^T (reduced over broadcast batch dims).
                       const Tensor a = sa.get();
                       const Tensor g2 = vector_rhs ? g.unsqueeze(-1) : g;
                       const Tensor x2 = vector_rhs ? sx.get().unsqueeze(-1) : sx.get();
                       const Tensor gb = solve_impl(op, transpose_matrices(a), g2, false);
                       Grads r(2);
                       r[0] = sum_to(neg(matmul(gb, transpose_matrices(x2))), a_shape);
                       r[1] = sum_to(gb, b2_shape).reshape(b_shape);
                       return r;
                     });
  return result;
}

void check_operands(const char* op, const Tensor& A, const Tensor& B) {
  check_square(op, A);
  detail::check_defined(op, B, "B");
  detail::check_same_device(op, {A, B});
  ANVIL_CHECK(A.dtype() == B.dtype(), op, ": expected A and B to have the same dtype, got ", detail::describe(A),
              " and ", detail::describe(B), "; cast one with .to()");
}

}  // namespace

Tensor solve(const Tensor& A, const Tensor& B, bool left) {
  check_operands("linalg.solve", A, B);
  if (left) return solve_impl("linalg.solve", A, B, is_vector_rhs(A, B));
  // X A = B  <=>  A^T X^T = B^T (a vector B is a row there, as in PyTorch).
  const bool vector_rhs = is_vector_rhs(A, B);
  const Tensor At = transpose_matrices(A);
  if (vector_rhs) return solve_impl("linalg.solve", At, B, true);
  ANVIL_CHECK(B.dim() >= 2, "linalg.solve: B must have at least 2 dimensions, got ", detail::describe(B));
  return transpose_matrices(solve_impl("linalg.solve", At, transpose_matrices(B), false));
}

Tensor inv(const Tensor& A) {
  check_square("linalg.inv", A);
  // A X = I; the gradient through solve's is PyTorch's -A^-T G A^-T.
  const Tensor identity = eye(A.size(-1), A.options()).expand(A.shape());
  return solve_impl("linalg.inv", A, identity, false);
}

namespace {

// The diagonal of U ([*batch, n], a view of the factors) and the sign of the
// row permutation ([*batch], +-1 in A's dtype).
std::pair<Tensor, Tensor> lu_diagonal_and_sign(const LuFactors& f, const Shape& batch) {
  const int64_t n = f.n;
  // The factors' storage is contiguous [*batch, n, n]: step n + 1 walks the diagonal.
  Shape diag_strides(f.storage.strides().begin(), f.storage.strides().end() - 2);
  diag_strides.push_back(n + 1);
  Tensor diagonal = alias_with(f.storage, with_tail(batch, {n}), diag_strides, f.storage.offset());
  const Tensor rows = arange(1, n + 1, 1, TensorOptions().dtype(kInt32).device(f.storage.device()));
  const Tensor swapped = ne(f.pivots, rows);
  const Tensor flips = where(swapped, scalar_tensor(-1.0, f.storage.options()), 1.0);
  return {diagonal, prod(flips, -1).reshape(batch)};
}

// g * A^-T, broadcast over the matrix dims: det's and logdet's gradient shape.
Tensor times_inverse_transpose(const char* op, const Tensor& A, const Tensor& scale) {
  const Tensor identity = eye(A.size(-1), A.options()).expand(A.shape());
  return scale.unsqueeze(-1).unsqueeze(-1) * transpose_matrices(solve_impl(op, A, identity, false));
}

}  // namespace

Tensor det(const Tensor& A) {
  const char* op = "linalg.det";
  check_square(op, A);
  const Shape batch = batch_of(A);
  LuFactors f = lu_factor(A, batch);
  auto [diagonal, sign] = lu_diagonal_and_sign(f, batch);
  Tensor value = prod(diagonal, -1) * sign;
  Tensor result = alias_with(value, value.shape(), value.strides(), value.offset());
  if (autograd::needs_grad({A}))
    autograd::record(op, {A}, result, [sa = SavedTensor(A, op), sd = SavedTensor::output(result, op)](const Tensor& g) {
      return Grads{times_inverse_transpose("linalg.det backward", sa.get(), g * sd.get())};
    });
  return result;
}

std::pair<Tensor, Tensor> slogdet(const Tensor& A) {
  const char* op = "linalg.slogdet";
  check_square(op, A);
  const Shape batch = batch_of(A);
  LuFactors f = lu_factor(A, batch);
  auto [diagonal, sign] = lu_diagonal_and_sign(f, batch);
  // A zero on U's diagonal gives sign 0 and log|det| -inf, as PyTorch.
  Tensor signs = prod(anvil::sign(diagonal), -1) * sign;
  Tensor logabs = sum(log(abs(diagonal)), -1);
  Tensor result = alias_with(logabs, logabs.shape(), logabs.strides(), logabs.offset());
  if (autograd::needs_grad({A}))
    autograd::record(op, {A}, result, [sa = SavedTensor(A, op)](const Tensor& g) {
      return Grads{times_inverse_transpose("linalg.slogdet backward", sa.get(), g)};
    });
  return {signs, result};
}

}  // namespace anvil::linalg
