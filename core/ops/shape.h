#pragma once
/// @file
/// Joining and splitting tensors. (Views themselves are Tensor methods.)
#include <vector>

#include "core/tensor.h"

namespace anvil {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);  ///< Joins tensors of one shape but `dim` along `dim`.
/// Joins tensors of one shape along a new dim at `dim`.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
/// Views of split_size indices of `dim` each (the last may be smaller).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
/// Views of sizes[i] indices of `dim` each; the sizes add up to the dim's size.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
/// `chunks` views of as equal sizes as possible along `dim` (fewer if the dim is small).
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);  ///< x.transpose(d0, d1).
Tensor permute(const Tensor& x, const Shape& dims);  ///< x.permute(dims).
Tensor reshape(const Tensor& x, const Shape& shape);  ///< x.reshape(shape).
Tensor flatten(const Tensor& x, int64_t start = 0, int64_t end = -1);  ///< x.flatten(start, end).

///@{
/// Copies that rearrange elements, as PyTorch's (differentiable: written with
/// views, index_select and cat, so their gradients come from those).
/// repeat: tiles x repeats[i] times along dim i (more repeats than dims add
/// leading dims). flip: reverses the given dims. roll: shifts each dim by its
/// shift, wrapping around (no dims: the flattened tensor, shape kept).
Tensor repeat(const Tensor& x, const Shape& repeats);
Tensor flip(const Tensor& x, const Shape& dims);
Tensor roll(const Tensor& x, const Shape& shifts, const Shape& dims = {});
template <DimIndex I> Tensor flip(const Tensor& x, I dim) { return flip(x, Shape{int64_t(dim)}); }
template <DimIndex I, DimIndex J> Tensor roll(const Tensor& x, I shift, J dim) {
  return roll(x, Shape{int64_t(shift)}, Shape{int64_t(dim)});
}
///@}
/// The slices of x along dim, as views (select), one per index.
std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);

/// Helpers shared by ops: wrap a possibly negative dim, or fail naming `op`.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
int64_t numel_of(const Shape& shape);  ///< Product of the sizes (1 for an empty shape).

}  // namespace anvil
