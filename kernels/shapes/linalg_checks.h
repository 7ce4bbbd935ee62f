#pragma once
// lu_factor / lu_solve arguments (kernels/backend.h), checked the same way on
// every backend: float32/float64 column-major batches of square matrices,
// int32 pivots and info.
#include "kernels/backend.h"

namespace anvil::shapes {

struct LuShape {
  int64_t batch = 0, n = 0, rhs = 0;  // rhs: columns of b (lu_solve only)
};

LuShape check_lu_factor(const View& a, const View& pivots, const View& info);
LuShape check_lu_solve(const View& lu, const View& pivots, const View& b);

}  // namespace anvil::shapes
