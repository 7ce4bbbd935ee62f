#pragma once
/// @file
/// Gathering and scattering by index tensors and masks: index_select, gather, scatter, masked_select, nonzero,
/// embedding lookups.
#include <optional>
#include <string_view>

#include "core/tensor.h"

namespace anvil {

/// index is a 1-D int64 tensor; out-of-range indices raise anvil::Error.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// index has x's rank; out[i][j] = x[index[i][j]][j] for dim 0, etc.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// Returns a copy of self with src added at positions given by index along dim.
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
/// Returns a copy of self with the slices of src added at self's positions
/// index[i] along dim (src.size(dim) == index.numel()); repeated indices add up.
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
///@{
/// A copy of self with src written at positions given by index along dim
/// (out[index[i][j]][j] = src[i][j] for dim 0), or a scalar value there.
/// reduce "add" or "multiply" combines instead of overwriting. Repeated
/// indices without reduce: the CPU keeps the last, CUDA any one (as PyTorch).
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce);
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce);
///@}
///@{
/// In place (reduce "" overwrites).
Tensor& scatter_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce = "");
Tensor& scatter_(Tensor& self, int64_t dim, const Tensor& index, const Scalar& value, std::string_view reduce = "");
///@}
/// int64 [n, x.dim()]: the coordinates of x's nonzero elements, row-major
/// order. Learning n reads a count on the host (synchronises with a GPU).
Tensor nonzero(const Tensor& x);
Tensor argwhere(const Tensor& x);  ///< the same
/// The elements of x where mask (bool, broadcast with x) is true, 1-D.
Tensor masked_select(const Tensor& x, const Tensor& mask);
/// A copy of self (broadcast with mask) whose elements where mask is true are
/// source's first elements, in order; source needs at least that many.
Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source);
/// gather along dim after broadcasting x and indices in the other dims; with
/// no dim, over the flattened x.
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim = std::nullopt);
/// Rows of weight [num, dim] picked by integer indices of any shape.
Tensor embedding(const Tensor& weight, const Tensor& indices);

}  // namespace anvil
