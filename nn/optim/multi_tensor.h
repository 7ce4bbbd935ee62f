#pragma once
// Batches parameters for the backend's multi-tensor optimizer updates: one
// backend call (one kernel launch on CUDA) per batch of parameters that share
// a device, a dtype and an optimizer-specific key (e.g. Adam's step count).
// Used by the optimizers' step(); not part of the public API.
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "core/tensor.h"
#include "kernels/backend.h"

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

  Backend& backend() const;
  std::vector<View> param_views() const { return views(work_params_); }
  std::vector<View> grad_views() const { return views(grads_); }
  std::vector<View> state_views(size_t k) const { return views(states_.at(k)); }
  // After the update: writes back copies and bumps the version counters.
  void finish();

 private:
  static std::vector<View> views(const std::vector<Tensor>& ts);
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
