#pragma once
/// @file
/// Tensors made from a pattern, as PyTorch's: the triangular parts of a
/// matrix (or of each matrix of a batch: the last two dims) and evenly spaced
/// values. tril/triu are differentiable (the gradient keeps the same part).
#include "core/tensor.h"

namespace anvil {

///@{
/// Elements on and below (tril) or above (triu) the diagonal `diagonal`
/// (0 the main one, > 0 above it, < 0 below); the rest are 0. x has >= 2 dims.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
///@}

///@{
/// `steps` values from start to end inclusive (float32 unless options say
/// otherwise); logspace gives base raised to them.
Tensor linspace(double start, double end, int64_t steps, const TensorOptions& options = {});
Tensor logspace(double start, double end, int64_t steps, double base = 10.0, const TensorOptions& options = {});
///@}

}  // namespace anvil
