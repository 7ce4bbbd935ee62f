#include "kernels/shapes/matmul_checks.h"

#include <utility>

#include "core/base/error.h"

namespace anvil::shapes {

View as_batched(const View& v) {
  if (v.dim() == 3) return v;
  View r = v;
  r.shape.insert(r.shape.begin(), 1);
  r.strides.insert(r.strides.begin(), 0);
  return r;
}

View transposed(const View& v) {
  ANVIL_CHECK(v.dim() >= 2, "transposed: needs a view of at least 2 dims, got ", v.dim());
  View r = v;
  const size_t last = r.shape.size() - 1;
  std::swap(r.shape[last - 1], r.shape[last]);
  std::swap(r.strides[last - 1], r.strides[last]);
  return r;
}

BatchedMatmul check_matmul(const View& out_in, const View& a_in, const View& b_in) {
  ANVIL_CHECK(out_in.dim() == a_in.dim() && a_in.dim() == b_in.dim() && (a_in.dim() == 2 || a_in.dim() == 3),
              "matmul: expected a [B, M, K], b [B, K, N] and out [B, M, N] (or all 2-D), got a ", a_in.shape, ", b ",
              b_in.shape, ", out ", out_in.shape);
  BatchedMatmul m{as_batched(out_in), as_batched(a_in), as_batched(b_in)};
  ANVIL_CHECK(m.a.shape[0] == m.out.shape[0] && m.b.shape[0] == m.out.shape[0] && m.a.shape[1] == m.out.shape[1] &&
                  m.b.shape[2] == m.out.shape[2] && m.a.shape[2] == m.b.shape[1],
              "matmul: shapes do not agree: a ", a_in.shape, " @ b ", b_in.shape, " -> out ", out_in.shape,
              " (expected a [B, M, K], b [B, K, N], out [B, M, N])");
  return m;
}

}  // namespace anvil::shapes
