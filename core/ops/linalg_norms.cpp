// torch.linalg's norms, composed of anvil's reductions (norm, sum, amax,
// amin) and, for ord 2, -2 and "nuc", of svdvals (linalg_svd.cpp), so their
// gradients are those ops' own: u1 v1^T, u_k v_k^T and U V^T.
#include <cmath>
#include <string>
#include <vector>

#include "core/autocast.h"
#include "core/dispatch.h"
#include "core/ops/elementwise.h"
#include "core/ops/linalg.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"

namespace anvil::linalg {
namespace {

void check_norm_input(const char* op, const Tensor& x) {
  detail::check_defined(op, x, "input");
  ANVIL_CHECK(is_floating(x.dtype()), op, ": expected a floating input, got ", detail::describe(x));
}

// The two matrix dims of `dim`, wrapped and distinct.
std::pair<int64_t, int64_t> matrix_dims(const char* op, const Tensor& x, const Shape& dim) {
  ANVIL_CHECK(dim.size() == 2, op, ": dim must be a 2-tuple of the matrix dims, got ", dim);
  ANVIL_CHECK(x.dim() >= 2, op, ": the input must have at least 2 dimensions, got ", detail::describe(x));
  const int64_t row = wrap_dim(dim[0], x.dim(), op), col = wrap_dim(dim[1], x.dim(), op);
  ANVIL_CHECK(row != col, op, ": dims must be different, got ", dim);
  return {row, col};
}

// max/min over `outer` of the sums of |x| over `inner` (the 1- and inf-norms).
Tensor extreme_of_abs_sums(const Tensor& x, int64_t inner, int64_t outer, bool largest, bool keepdim) {
  Tensor sums = sum(abs(x), Shape{inner}, true);
  Tensor r = largest ? amax(sums, Shape{outer}, true) : amin(sums, Shape{outer}, true);
  if (keepdim) return r;
  return r.squeeze(std::max(inner, outer)).squeeze(std::min(inner, outer));
}

// The singular values of the matrices of x over (row, col): [*rest, k].
Tensor singular_values(const char* op, const Tensor& x, int64_t row, int64_t col) {
  ANVIL_CHECK(x.dtype() == kFloat32 || x.dtype() == kFloat64, op,
              ": the singular-value norms (ord 2, -2, \"nuc\") need float32 or float64, got ", detail::describe(x));
  std::vector<int64_t> order;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != row && d != col) order.push_back(d);
  order.push_back(row);
  order.push_back(col);
  return svdvals(x.permute(Shape(order.begin(), order.end())));
}

// A reduction of the matrix dims, with them kept as size 1 when asked.
Tensor keep_matrix_dims(Tensor r, int64_t row, int64_t col, bool keepdim) {
  if (!keepdim) return r;
  return r.unsqueeze(std::min(row, col)).unsqueeze(std::max(row, col));
}

}  // namespace

Tensor vector_norm(const Tensor& x, double ord, const Shape& dim, bool keepdim) {
  if (auto cast = autocast::full_precision_inputs(x)) return vector_norm(cast[0], ord, dim, keepdim);
  const char* op = "linalg.vector_norm";
  check_norm_input(op, x);
  // Checked here too, so that a bad dim names this op rather than norm, which does the work.
  for (int64_t d : dim) wrap_dim(d, x.dim(), op);
  return anvil::norm(x, ord, dim, keepdim);
}

Tensor matrix_norm(const Tensor& x, double ord, const Shape& dim, bool keepdim) {
  const char* op = "linalg.matrix_norm";
  check_norm_input(op, x);
  auto [row, col] = matrix_dims(op, x, dim);
  if (std::fabs(ord) == 1.0) return extreme_of_abs_sums(x, row, col, ord > 0, keepdim);  // column sums
  if (std::isinf(ord)) return extreme_of_abs_sums(x, col, row, ord > 0, keepdim);  // row sums
  ANVIL_CHECK(std::fabs(ord) == 2.0, op, ": order ", ord,
              " is not supported; expected one of 1, -1, 2, -2, inf, -inf, \"fro\", \"nuc\"");
  ANVIL_CHECK(x.size(row) > 0 && x.size(col) > 0, op, ": ord ", ord, " (the ", ord > 0 ? "largest" : "smallest",
              " singular value) needs non-empty matrices, got ", detail::describe(x), " with dim (", row, ", ", col,
              ")");
  const Tensor s = singular_values(op, x, row, col);
  return keep_matrix_dims(ord > 0 ? amax(s, Shape{-1}) : amin(s, Shape{-1}), row, col, keepdim);
}

Tensor matrix_norm(const Tensor& x, std::string_view ord, const Shape& dim, bool keepdim) {
  const char* op = "linalg.matrix_norm";
  check_norm_input(op, x);
  auto [row, col] = matrix_dims(op, x, dim);
  if (ord == "fro") return anvil::norm(x, 2.0, Shape{row, col}, keepdim);
  if (ord == "nuc") return keep_matrix_dims(sum(singular_values(op, x, row, col), Shape{-1}), row, col, keepdim);
  fail(op, ": order \"", std::string(ord), "\" is not supported; expected \"fro\", \"nuc\" or a number (1, -1, 2, ",
       "-2, inf, -inf)");
}

Tensor norm(const Tensor& x, std::optional<double> ord, const Shape& dim, bool keepdim) {
  const char* op = "linalg.norm";
  check_norm_input(op, x);
  if (dim.size() == 2) return ord ? matrix_norm(x, *ord, dim, keepdim) : matrix_norm(x, "fro", dim, keepdim);
  ANVIL_CHECK(dim.size() <= 1, op, ": dim must have 1 or 2 dims (or none), got ", dim);
  if (!dim.empty() || !ord) return vector_norm(x, ord.value_or(2.0), dim, keepdim);
  ANVIL_CHECK(x.dim() == 1 || x.dim() == 2, op, ": with ord and no dim, the input must be 1-D or 2-D, got ",
              detail::describe(x));
  if (x.dim() == 1) return vector_norm(x, *ord, {0}, keepdim);
  return matrix_norm(x, *ord, {0, 1}, keepdim);
}

Tensor norm(const Tensor& x, std::string_view ord, const Shape& dim, bool keepdim) {
  const char* op = "linalg.norm";
  check_norm_input(op, x);
  if (dim.empty()) {
    ANVIL_CHECK(x.dim() == 2, op, ": ord \"", std::string(ord), "\" with no dim needs a 2-D input, got ",
                detail::describe(x));
    return matrix_norm(x, ord, {0, 1}, keepdim);
  }
  ANVIL_CHECK(dim.size() == 2, op, ": ord \"", std::string(ord), "\" is a matrix norm: dim must name 2 dims, got ",
              dim);
  return matrix_norm(x, ord, dim, keepdim);
}

}  // namespace anvil::linalg
