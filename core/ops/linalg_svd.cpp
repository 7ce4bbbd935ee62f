// torch.linalg's singular value ops: svd (reduced) and svdvals, on the
// backend's svd (LAPACK gesdd on the CPU, cuSOLVER gesvdj on CUDA, a Jacobi
// kernel on the emulated GPU). The matrix norms 2, -2 and "nuc"
// (linalg_norms.cpp) are built on svdvals. Gradients are PyTorch's formulas
// written with anvil ops; the singular vectors they use are saved as
// constants, so a second derivative is not that of the SVD.
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "core/autocast.h"
#include "core/autograd/function.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/linalg.h"
#include "core/ops/linalg_lapack.h"
#include "core/ops/shape.h"

namespace anvil::linalg {

using autograd::SavedTensor;
using Grads = std::vector<Tensor>;
using namespace detail_lapack;

namespace {

void check_svd_input(const char* op, const Tensor& A) {
  detail::check_defined(op, A, "A");
  ANVIL_CHECK(A.dim() >= 2, op, ": A must have at least 2 dimensions (a matrix or a batch of them), got ",
              detail::describe(A));
  ANVIL_CHECK(A.dtype() == kFloat32 || A.dtype() == kFloat64, op, ": expected A of dtype float32 or float64, got ",
              detail::describe(A));
}

// PyTorch's drivers are CUDA-only hints; anvil picks its own (gesdd on the
// CPU, gesvdj on CUDA) and checks only that the name is one of them.
void check_driver(const char* op, std::optional<std::string_view> driver) {
  ANVIL_CHECK(!driver || *driver == "gesvd" || *driver == "gesvdj" || *driver == "gesvda", op, ": driver \"",
              std::string(driver.value_or("")), "\" is not one of \"gesvd\", \"gesvdj\", \"gesvda\" (or none)");
}

struct SvdParts {
  Tensor U, S, Vh;  // [*, m, k], [*, k], [*, k, n]; U and Vh only when asked for
};

// PyTorch's message for a failed iteration, naming the batch element.
void check_converged(const char* op, const Tensor& info, const Shape& batch, const Tensor& A) {
  const std::vector<int64_t> codes = info.to_vector<int64_t>();
  for (size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] == 0) continue;
    const std::string element = batch.empty() ? std::string() : "(Batch element " + std::to_string(i) + "): ";
    fail(op, ": ", element, "The algorithm failed to converge because the input matrix is ill-conditioned or has ",
         "too many repeated singular values (error code: ", codes[i], "; ", detail::describe(A), ")");
  }
}

// The reduced SVD of A [*, m, n], without autograd.
SvdParts factorize(const char* op, const Tensor& A, bool vectors) {
  const Shape batch = batch_of(A);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = numel_of(batch);
  Tensor a = column_major_copy(A, batch);  // the backend's scratch
  SvdParts p;
  p.S = empty(with_tail(batch, {k}), A.options());
  View s = p.S.view_of();
  s.shape = {count, k};
  s.strides = {k, 1};
  Tensor info = empty({count}, TensorOptions().dtype(kInt32).device(A.device()));
  Runtime& backend = detail::runtime_of(A);
  if (vectors) {
    // V column-major [n, k] is Vh row-major [k, n]: the storage is Vh itself.
    Tensor u = empty(with_tail(batch, {k, m}), A.options()), v = empty(with_tail(batch, {k, n}), A.options());
    const View uv = lapack_view(u, count, m, k), vv = lapack_view(v, count, n, k);
    kernel_for<kernel::Svd>(backend.type())(lapack_view(a, count, m, n), s, &uv, &vv, info.view_of());
    p.U = transpose_matrices(u);
    p.Vh = v;
  } else {
    kernel_for<kernel::Svd>(backend.type())(lapack_view(a, count, m, n), s, nullptr, nullptr, info.view_of());
  }
  check_converged(op, info, batch, A);
  return p;
}

// PyTorch's svd_backward for real inputs (FunctionsManual.cpp), with every
// gradient given (zeros where an output was not used):
//   gA = U [(skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS)] V^T
//        + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T)
// with skew(X) = X - X^T and E_ij = s_j^2 - s_i^2 off the diagonal. It needs
// distinct nonzero singular values, as PyTorch's.
Tensor svd_backward(const Tensor& gU, const Tensor& gS, const Tensor& gVh, const Tensor& U, const Tensor& S,
                    const Tensor& Vh) {
  const int64_t m = U.size(-2), n = Vh.size(-1), k = S.size(-1);
  auto skew = [](const Tensor& X) { return X - transpose_matrices(X); };
  const Tensor V = transpose_matrices(Vh), gV = transpose_matrices(gVh);
  const Tensor UtgU = skew(matmul(transpose_matrices(U), gU)), VtgV = skew(matmul(Vh, gV));
  const Tensor S2 = S * S, I = eye(k, S.options());
  const Tensor E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + I;  // 1 on the diagonal, where the numerators are 0
  Tensor gA = (UtgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VtgV) / E + I * gS.unsqueeze(-2);
  if (m > k) {
    gA = matmul(U, gA);
    const Tensor gUSinv = gU / S.unsqueeze(-2);
    gA = gA + gUSinv - matmul(U, matmul(transpose_matrices(U), gUSinv));
    return matmul(gA, Vh);
  }
  if (n > k) {
    gA = matmul(gA, Vh);
    const Tensor SinvgVh = gVh / S.unsqueeze(-1);
    gA = gA + SinvgVh - matmul(matmul(SinvgVh, V), Vh);
    return matmul(U, gA);
  }
  return matmul(U, matmul(gA, Vh));
}

}  // namespace

Tensor svdvals(const Tensor& A, std::optional<std::string_view> driver) {
  if (auto cast = autocast::full_precision_inputs(A)) return svdvals(cast[0], driver);
  const char* op = "linalg.svdvals";
  check_svd_input(op, A);
  check_driver(op, driver);
  const bool grad = autograd::needs_grad({A});
  SvdParts p = factorize(op, A, grad);
  Tensor S = p.S;
  // dS_i = u_i^T dA v_i, so gA = U diag(gS) V^T.
  if (grad)
    autograd::record(op, {A}, S, [su = SavedTensor(p.U, op), svh = SavedTensor(p.Vh, op)](const Tensor& g) {
      return Grads{matmul(su.get() * g.unsqueeze(-2), svh.get())};
    });
  return S;
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices, std::optional<std::string_view> driver) {
  if (auto cast = autocast::full_precision_inputs(A)) return svd(cast[0], full_matrices, driver);
  const char* op = "linalg.svd";
  check_svd_input(op, A);
  check_driver(op, driver);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  ANVIL_CHECK(!full_matrices || m == n, op, ": full_matrices=true for ", m, "x", n, " matrices (", detail::describe(A),
              ") is not supported: anvil computes the reduced SVD, U [*, m, k] and Vh [*, k, n] ",
              "with k = min(m, n); pass full_matrices=false");
  SvdParts p = factorize(op, A, true);
  if (!autograd::needs_grad({A})) return {p.U, p.S, p.Vh};
  // One node for three outputs: they are views of one packed tensor, so its
  // backward sees the three gradients together (zeros for an unused one).
  const Shape batch = batch_of(A);
  Tensor packed = cat({p.U.reshape(with_tail(batch, {m * k})), p.S, p.Vh.reshape(with_tail(batch, {k * n}))}, -1);
  autograd::record(op, {A}, packed,
                   [su = SavedTensor(p.U, op), ss = SavedTensor(p.S, op), svh = SavedTensor(p.Vh, op), m, n, k,
                    batch](const Tensor& g) {
                     const Tensor gU = g.narrow(-1, 0, m * k).reshape(with_tail(batch, {m, k}));
                     const Tensor gS = g.narrow(-1, m * k, k);
                     const Tensor gVh = g.narrow(-1, m * k + k, k * n).reshape(with_tail(batch, {k, n}));
                     return Grads{svd_backward(gU, gS, gVh, su.get(), ss.get(), svh.get())};
                   });
  return {packed.narrow(-1, 0, m * k).reshape(with_tail(batch, {m, k})), packed.narrow(-1, m * k, k),
          packed.narrow(-1, m * k + k, k * n).reshape(with_tail(batch, {k, n}))};
}

}  // namespace anvil::linalg
