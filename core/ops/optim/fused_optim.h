#pragma once
// Fused multi-tensor optimizer updates (as PyTorch's _fused_adamw_): one
// kernel call — one launch on CUDA — updates every parameter of a list in
// place, with its state. nn/optim's Adam, AdamW and SGD batch their
// parameters by device and dtype and call these.
#include <vector>

#include "core/tensor.h"
#include "kernels/ops/optim_kernels.h"

namespace anvil {

// params, grads, exp_avg, exp_avg_sq: lists of one length; the i-th of each
// dense, of one shape; all of one device and dtype.
void fused_adamw_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                  const std::vector<Tensor>& exp_avg, const std::vector<Tensor>& exp_avg_sq, const AdamWParams& p);
// momentum: empty (no momentum) or a list as long as params.
void fused_sgd_(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                const std::vector<Tensor>& momentum, const SGDParams& p);

}  // namespace anvil
