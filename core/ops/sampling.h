#pragma once
/// @file
/// Random sampling, as PyTorch's, drawn from the global Philox generator
/// (core/random.h): the same seed gives the same result on every device.
#include "core/tensor.h"

namespace anvil {

/// A random permutation of 0 .. n - 1 (int64 unless options say otherwise).
Tensor randperm(int64_t n, const TensorOptions& options = kInt64);
/// num_samples category indices (int64) per row of probs ([n] or [rows, n]:
/// non-negative weights, not necessarily normalised), with or without
/// replacement (then num_samples <= the row's non-zero weights).
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false);
///@{
/// 1 with probability p (each element of `probs`, or the scalar p for every
/// element of x), else 0, in the dtype of probs / x.
Tensor bernoulli(const Tensor& probs);
Tensor bernoulli(const Tensor& x, double p);
///@}

}  // namespace anvil
