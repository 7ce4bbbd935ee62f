#pragma once
/// @file
/// Sorting along one dim (negative dims count from the end), as PyTorch's:
/// values and int64 indices into dim, NaN above every number, equal values in
/// their original order (every sort here is stable, so `stable` changes
/// nothing). topk's k largest (or smallest) come sorted. The values are
/// differentiable: the gradient goes back to where each value came from.
#include <utility>

#include "core/tensor.h"

namespace anvil {

/// Values sorted along `dim` (ascending unless `descending`), and the int64 indices they came from.
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
/// The indices sort would order x by.
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
/// The k largest values along `dim` (smallest with largest = false), sorted, and their indices.
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);

}  // namespace anvil
