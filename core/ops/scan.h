#pragma once
/// @file
/// Cumulative ops along one dim (negative dims count from the end), as
/// PyTorch's: cumsum and cumprod of bool and integer tensors give int64 (or
/// the dtype asked for), logcumsumexp takes floating tensors. Differentiable.
#include <optional>

#include "core/tensor.h"

namespace anvil {

/// Running sum along `dim`, in `dtype` if given.
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
/// Running product along `dim`, in `dtype` if given.
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor logcumsumexp(const Tensor& x, int64_t dim);  ///< log(cumsum(exp(x))) along `dim`, computed without overflow.

}  // namespace anvil
