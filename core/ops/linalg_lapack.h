#pragma once
// What the LAPACK-backed linalg ops (linalg_solve.cpp, linalg_svd.cpp) share:
// batches of matrices copied into LAPACK's column-major layout and the
// backend's view of them. Internal to core/ops.
#include <initializer_list>

#include "core/factory.h"
#include "core/tensor.h"
#include "kernels/view.h"

namespace anvil::linalg::detail_lapack {

inline Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

inline Shape with_tail(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}

inline Tensor transpose_matrices(const Tensor& t) { return t.transpose(-1, -2); }

// Column-major [B, rows, cols] copy of t [*batch, rows, cols] expanded to
// `batch`: the layout LAPACK and cuSOLVER work in, and their scratch (both
// overwrite it). Returns the row-major [*batch, cols, rows] storage tensor.
// Always a fresh copy: contiguous() would return the caller's own tensor when
// its transpose is already dense (a vector B, a transposed A), and LAPACK
// would overwrite it.
inline Tensor column_major_copy(const Tensor& t, const Shape& batch) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  Tensor storage = empty(with_tail(batch, {cols, rows}), t.options());
  if (storage.numel() > 0) storage.copy_(transpose_matrices(t.detach().expand(with_tail(batch, {rows, cols}))));
  return storage;
}

inline View lapack_view(const Tensor& storage, int64_t batch, int64_t rows, int64_t cols) {
  View v = storage.view_of();
  return View{v.data, v.dtype, {batch, rows, cols}, {rows * cols, 1, rows}, v.device_index};
}

}  // namespace anvil::linalg::detail_lapack
