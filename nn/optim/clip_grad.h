#pragma once
/// @file
/// Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_.
/// Parameters without a gradient are ignored.
#include <vector>

#include "core/tensor.h"

namespace anvil::nn::optim {

/// Scales every gradient in place by max_norm / (total + 1e-6) when the total
/// norm exceeds max_norm, and returns the total norm: the norm_type-norm of
/// all gradients together as if concatenated (norm_type may be INFINITY).
/// A non-finite total (a gradient holds inf or nan) is returned as is and the
/// gradients are left untouched: the caller decides (e.g. skip the step, as
/// dynamic loss scaling does).
double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type = 2.0);

/// Clamps every gradient element into [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace anvil::nn::optim

// Where libtorch has them: torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0).
namespace anvil::nn::utils {
using optim::clip_grad_norm_;
using optim::clip_grad_value_;

}  // namespace anvil::nn::utils
