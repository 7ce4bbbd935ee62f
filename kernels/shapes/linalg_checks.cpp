#include "kernels/shapes/linalg_checks.h"

#include <algorithm>

#include "core/base/error.h"

namespace anvil::shapes {
namespace {

// A [B, rows, cols] view whose matrices are column-major and packed one after
// another: LAPACK's layout, so the libraries read it in place.
void check_column_major(const char* op, const char* what, const View& v) {
  ANVIL_CHECK(v.dim() == 3, op, ": expected ", what, " as [B, rows, cols], got shape ", v.shape);
  const int64_t rows = v.shape[1], cols = v.shape[2];
  const bool packed = (v.shape[0] <= 1 || v.strides[0] == rows * cols) && (rows <= 1 || v.strides[1] == 1) &&
                      (cols <= 1 || v.strides[2] == rows);
  ANVIL_CHECK(v.numel() == 0 || packed, op, ": expected ", what, " column-major with strides {", rows * cols, ", 1, ",
              rows, "}, got shape ", v.shape, " strides ", v.strides);
  ANVIL_CHECK(v.dtype == kFloat32 || v.dtype == kFloat64, op, ": expected ", what, " of dtype float32 or float64, got ",
              v.dtype);
}

void check_info(const char* op, const View& info, int64_t batch) {
  ANVIL_CHECK(info.dtype == kInt32 && info.dim() == 1 && info.shape[0] == batch && (batch <= 1 || info.strides[0] == 1),
              op, ": expected contiguous int32 info of shape [", batch, "], got ", info.dtype, " ", info.shape);
}

void check_pivots(const char* op, const View& pivots, int64_t batch, int64_t n) {
  ANVIL_CHECK(pivots.dtype == kInt32 && pivots.dim() == 2 && pivots.shape[0] == batch && pivots.shape[1] == n &&
                  (pivots.numel() == 0 || pivots.is_contiguous()),
              op, ": expected contiguous int32 pivots of shape [", batch, ", ", n, "], got ", pivots.dtype, " ",
              pivots.shape);
}

}  // namespace

LuShape check_lu_factor(const View& a, const View& pivots, const View& info) {
  check_column_major("lu_factor", "a", a);
  ANVIL_CHECK(a.shape[1] == a.shape[2], "lu_factor: expected square matrices, got shape ", a.shape);
  LuShape s{a.shape[0], a.shape[1], 0};
  check_pivots("lu_factor", pivots, s.batch, s.n);
  check_info("lu_factor", info, s.batch);
  return s;
}

LuShape check_lu_solve(const View& lu, const View& pivots, const View& b) {
  check_column_major("lu_solve", "lu", lu);
  check_column_major("lu_solve", "b", b);
  ANVIL_CHECK(lu.shape[1] == lu.shape[2] && b.shape[0] == lu.shape[0] && b.shape[1] == lu.shape[1],
              "lu_solve: expected lu [B, n, n] and b [B, n, k], got lu ", lu.shape, " and b ", b.shape);
  ANVIL_CHECK(lu.dtype == b.dtype, "lu_solve: lu and b differ in dtype: ", lu.dtype, " and ", b.dtype);
  check_pivots("lu_solve", pivots, lu.shape[0], lu.shape[1]);
  return LuShape{lu.shape[0], lu.shape[1], b.shape[2]};
}

SvdShape check_svd(const View& a, const View& s, const View* u, const View* v, const View& info) {
  check_column_major("svd", "a", a);
  SvdShape r{a.shape[0], a.shape[1], a.shape[2], std::min(a.shape[1], a.shape[2]), u != nullptr};
  ANVIL_CHECK((u == nullptr) == (v == nullptr), "svd: expected both u and v, or neither");
  ANVIL_CHECK(s.dtype == a.dtype && s.dim() == 2 && s.shape[0] == r.batch && s.shape[1] == r.k &&
                  (s.numel() == 0 || s.is_contiguous()),
              "svd: expected contiguous s of shape [", r.batch, ", ", r.k, "] and dtype ", a.dtype, ", got ", s.dtype,
              " ", s.shape);
  if (r.vectors) {
    check_column_major("svd", "u", *u);
    check_column_major("svd", "v", *v);
    const Shape u_shape{r.batch, r.m, r.k}, v_shape{r.batch, r.n, r.k};
    ANVIL_CHECK(u->dtype == a.dtype && v->dtype == a.dtype && u->shape == u_shape && v->shape == v_shape,
                "svd: expected u [", r.batch, ", ", r.m, ", ", r.k, "] and v [", r.batch, ", ", r.n, ", ", r.k,
                "] of dtype ", a.dtype, ", got u ", u->dtype, " ", u->shape, " and v ", v->dtype, " ", v->shape);
  }
  check_info("svd", info, r.batch);
  return r;
}

}  // namespace anvil::shapes
