#pragma once
#include "kernels/view.h"
// lu_factor / lu_solve / svd arguments (kernels/runtime.h), checked the same
// way on every backend: float32/float64 column-major batches of matrices
// (square for LU), int32 pivots and info.

namespace anvil::shapes {

struct LuShape {
  int64_t batch = 0, n = 0, rhs = 0;  // rhs: columns of b (lu_solve only)
};

LuShape check_lu_factor(const View& a, const View& pivots, const View& info);
LuShape check_lu_solve(const View& lu, const View& pivots, const View& b);

struct SvdShape {
  int64_t batch = 0, m = 0, n = 0, k = 0;  // a is [batch, m, n]; k = min(m, n)
  bool vectors = false;  // u and v given
};

SvdShape check_svd(const View& a, const View& s, const View* u, const View* v, const View& info);

}  // namespace anvil::shapes
