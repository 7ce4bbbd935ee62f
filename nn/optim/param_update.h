#pragma once
// Helpers for the optimizers whose update is written with tensor ops
// (RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, Lion): the ops run on the
// parameter's device, so these work for CPU and CUDA tensors alike. Not part
// of the public API.
#include <string>

#include "core/tensor.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::optim::internal {

// The gradient as the update reads it: checked against the parameter, in the
// parameter's dtype, negated when `maximize`, plus weight_decay * p (L2) when
// `weight_decay` is not 0. Never aliases p.grad().
Tensor update_grad(const Tensor& param, bool maximize, double weight_decay, const std::string& op);

// The state buffer `name`, created filled with `fill` (the parameter's
// shape, dtype and device) if missing.
Tensor& state_buffer(ParamState& state, const std::string& name, const Tensor& param, double fill = 0.0);

// Option checks with the optimizer's name in the message.
void check_lr(const std::string& optimizer, double lr);
void check_non_negative(const std::string& optimizer, const char* what, double value);
void check_betas(const std::string& optimizer, double beta1, double beta2);  // each in [0, 1)

}  // namespace anvil::nn::optim::internal
