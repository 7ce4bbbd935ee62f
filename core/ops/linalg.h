#pragma once
/// @file
/// Matrix products (matmul, mm, bmm, dot) and torch.linalg's solves, inverses, determinants, SVD and norms.
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include "core/tensor.h"

namespace anvil {

/// PyTorch's matmul: 1-D x 1-D dot, 2-D x 2-D, and batched with broadcast
/// batch dims; 1-D operands are promoted and the added dim removed.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);  ///< 2-D only
Tensor bmm(const Tensor& a, const Tensor& b);  ///< 3-D only, equal batch
Tensor dot(const Tensor& a, const Tensor& b);  ///< 1-D only

// torch.linalg: anvil::linalg::solve(A, B) as torch::linalg::solve(A, B).
// Float32 and float64; A is [*, n, n] and batch dims broadcast. On the CPU
// through LAPACK (getrf/getrs), on CUDA through cuSOLVER.
namespace linalg {

/// X with A X = B (left) or X A = B (left = false). B is [*, n, k], or a
/// vector: [n], or [*, n] with * A's batch dims exactly (PyTorch's rule). A
/// singular A is an error naming the batch element, as in PyTorch; checking
/// it reads the LU's status back to the host (a GPU synchronizes).
Tensor solve(const Tensor& A, const Tensor& B, bool left = true);
Tensor inv(const Tensor& A);  ///< [*, n, n]; a singular A is an error, as solve
/// Determinant, and (sign, log|det|) of [*, n, n] from an LU factorization. A
/// singular A gives 0 (and sign 0, -inf). Their gradient, det * A^-T, needs an
/// invertible A: at a singular one it raises.
Tensor det(const Tensor& A);
std::pair<Tensor, Tensor> slogdet(const Tensor& A);  ///< (sign, log|det|) of [*, n, n]; a singular A gives (0, -inf).

/// Singular values of A [*, m, n] (float32 or float64), [*, k] with
/// k = min(m, n), descending. `driver` is PyTorch's CUDA hint ("gesvd",
/// "gesvdj", "gesvda"): accepted, and anvil picks its own (LAPACK gesdd on the
/// CPU, cuSOLVER gesvdj on CUDA). Gradient U diag(g) V^T.
Tensor svdvals(const Tensor& A, std::optional<std::string_view> driver = std::nullopt);
/// The reduced SVD A = U diag(S) Vh: U [*, m, k], S [*, k], Vh [*, k, n], as
/// torch.linalg.svd(A, full_matrices=False). full_matrices=true (PyTorch's
/// default) is the same for square matrices; for others it is an error, since
/// anvil does not complete U or Vh. Gradients flow through all three (PyTorch's
/// formula; it needs distinct, nonzero singular values).
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices = true,
                                       std::optional<std::string_view> driver = std::nullopt);

/// sum(|x|^ord)^(1/ord) over `dim` (empty: every dim); ord may be inf
/// (max |x|), -inf (min |x|), 0 (count of nonzeros) or any other number.
Tensor vector_norm(const Tensor& x, double ord = 2, const Shape& dim = {}, bool keepdim = false);
///@{
/// Norms of the matrices over the two dims of `dim`: ord 1 / -1 (max / min
/// column sum of |x|), inf / -inf (max / min row sum), 2 / -2 (largest /
/// smallest singular value), "fro" (Frobenius), "nuc" (sum of the singular
/// values). The singular-value norms need float32 or float64.
Tensor matrix_norm(const Tensor& x, double ord, const Shape& dim = {-2, -1}, bool keepdim = false);
Tensor matrix_norm(const Tensor& x, std::string_view ord = "fro", const Shape& dim = {-2, -1}, bool keepdim = false);
///@}
///@{
/// torch.linalg.norm: with `dim` of one dim a vector norm, of two a matrix
/// norm; with no dim, a vector norm of x's 1-D or a matrix norm of its 2-D
/// form (ord needs 1 or 2 dims then), and without ord the 2-norm of all of x.
Tensor norm(const Tensor& x, std::optional<double> ord = std::nullopt, const Shape& dim = {}, bool keepdim = false);
Tensor norm(const Tensor& x, std::string_view ord, const Shape& dim = {}, bool keepdim = false);
///@}

/// libtorch's torch::linalg forms take every argument, a dtype last: x is
/// converted to it first (as PyTorch's dtype=), none keeps x's.
inline Tensor vector_norm(const Tensor& x, double ord, const Shape& dim, bool keepdim, std::optional<DType> dtype) {
  return vector_norm(dtype ? x.to(*dtype) : x, ord, dim, keepdim);
}
/// matrix_norm of x converted to `dtype` first (as torch::linalg::matrix_norm's dtype).
inline Tensor matrix_norm(const Tensor& x, double ord, const Shape& dim, bool keepdim, std::optional<DType> dtype) {
  return matrix_norm(dtype ? x.to(*dtype) : x, ord, dim, keepdim);
}
/// matrix_norm of x converted to `dtype` first (as torch::linalg::matrix_norm's dtype).
inline Tensor matrix_norm(const Tensor& x, std::string_view ord, const Shape& dim, bool keepdim,
                          std::optional<DType> dtype) {
  return matrix_norm(dtype ? x.to(*dtype) : x, ord, dim, keepdim);
}
/// norm of x converted to `dtype` first (as torch::linalg::norm's dtype).
inline Tensor norm(const Tensor& x, std::optional<double> ord, const Shape& dim, bool keepdim,
                   std::optional<DType> dtype) {
  return norm(dtype ? x.to(*dtype) : x, ord, dim, keepdim);
}
/// norm of x converted to `dtype` first (as torch::linalg::norm's dtype).
inline Tensor norm(const Tensor& x, std::string_view ord, const Shape& dim, bool keepdim, std::optional<DType> dtype) {
  return norm(dtype ? x.to(*dtype) : x, ord, dim, keepdim);
}

}  // namespace linalg

}  // namespace anvil
