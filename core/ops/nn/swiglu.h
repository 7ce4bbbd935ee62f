#pragma once
/// @file
/// swiglu(gate, up) = silu(gate) * up: the activation of a Llama-family MLP,
/// down(swiglu(gate_proj(x), up_proj(x))). One fused kernel where the device
/// has one (kernels/ops/swiglu_kernels.h), the composed ops otherwise; either
/// way differentiable, twice over (the double backward is composed).
#include "core/tensor.h"

namespace anvil {

/// gate and up: one shape, one floating dtype, one device.
Tensor swiglu(const Tensor& gate, const Tensor& up);

}  // namespace anvil
