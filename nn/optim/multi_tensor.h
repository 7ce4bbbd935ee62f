#pragma once
// Batches parameters for the fused multi-tensor optimizer updates: one
// kernel call (one launch on CUDA) per batch of parameters that share
// a device, a dtype and an optimizer-specific key (e.g. Adam's step count).
// Used by the optimizers' step(); not part of the public API.
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "core/tensor.h"

namespace anvil::nn::optim::internal {

class MultiTensorBatch {
 public:
  explicit MultiTensorBatch(size_t num_states) : states_(num_states) {}

  // Adds a parameter with its gradient and state tensors (same shape). The
  // gradient is negated when `negate_grad`, cast to the parameter's dtype and
  // made contiguous; a non-contiguous parameter is updated through a
  // contiguous copy that finish() writes back.
  void add(const Tensor& param, const Tensor& grad, const std::vector<Tensor>& states, bool negate_grad,
           const char* op);

  // What the fused update (core/ops/optim/fused_optim.h) takes: dense
  // parameters (copies of non-contiguous ones), gradients, state k's tensors.
  const std::vector<Tensor>& params() const { return work_params_; }
  const std::vector<Tensor>& grads() const { return grads_; }
  const std::vector<Tensor>& states(size_t k) const { return states_.at(k); }
  // After the update: writes back copies and bumps the version counters.
  void finish();

 private:
  std::vector<Tensor> params_, work_params_, grads_;
  std::vector<std::vector<Tensor>> states_;
};

// Device type, device index, dtype, optimizer key.
using BatchKey = std::tuple<int, int, int, int64_t>;
inline BatchKey batch_key(const Tensor& param, int64_t extra) {
  const Device d = param.device();
  return {static_cast<int>(d.type), d.index, static_cast<int>(param.dtype()), extra};
}
using Batches = std::map<BatchKey, MultiTensorBatch>;

// The batch for `key`, created with `num_states` state lists if new.
MultiTensorBatch& batch_for(Batches& batches, const BatchKey& key, size_t num_states);

}  // namespace anvil::nn::optim::internal
