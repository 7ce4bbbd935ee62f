#pragma once
#include "kernels/view.h"
// matmul's operand shapes, checked the same way on every backend.

namespace anvil::shapes {

// A [B, rows, cols] view as a 3-D view (a 2-D one gets a broadcast batch dim).
View as_batched(const View& v);
// Swaps the last two dims: a matrix's rows and columns, a batch's matrix dims.
View transposed(const View& v);

// out = a @ b, all 3-D after as_batched.
struct BatchedMatmul {
  View out, a, b;
};

// a [B, M, K] @ b [B, K, N] -> out [B, M, N], or all 2-D.
BatchedMatmul check_matmul(const View& out, const View& a, const View& b);

}  // namespace anvil::shapes
