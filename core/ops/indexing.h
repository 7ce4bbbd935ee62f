#pragma once
#include "core/tensor.h"

namespace anvil {

// index is a 1-D int64 tensor; out-of-range indices raise anvil::Error.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// index has x's rank; out[i][j] = x[index[i][j]][j] for dim 0, etc.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// Returns a copy of self with src added at positions given by index along dim.
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// Returns a copy of self with the slices of src added at self's positions
// index[i] along dim (src.size(dim) == index.numel()); repeated indices add up.
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// Rows of weight [num, dim] picked by integer indices of any shape.
Tensor embedding(const Tensor& weight, const Tensor& indices);

}  // namespace anvil
