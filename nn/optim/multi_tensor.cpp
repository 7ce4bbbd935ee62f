#include "nn/optim/multi_tensor.h"

#include "core/dispatch.h"
#include "core/ops/elementwise.h"

namespace anvil::nn::optim::internal {

void MultiTensorBatch::add(const Tensor& param, const Tensor& grad, const std::vector<Tensor>& states, bool negate_grad,
                           const char* op) {
  ANVIL_CHECK(grad.shape() == param.shape() && grad.device() == param.device(), op, ": gradient ",
              anvil::detail::describe(grad), " does not match parameter ", anvil::detail::describe(param));
  ANVIL_CHECK(states.size() == states_.size(), op, ": internal error: expected ", states_.size(),
              " state tensors, got ", states.size());
  Tensor g = grad.detach();
  if (negate_grad) g = neg(g);
  if (g.dtype() != param.dtype()) g = g.to(param.dtype());
  params_.push_back(param);
  work_params_.push_back(param.is_contiguous() ? param : param.contiguous());
  grads_.push_back(g.contiguous());
  for (size_t k = 0; k < states.size(); ++k) {
    ANVIL_CHECK(states[k].is_contiguous() && states[k].shape() == param.shape(), op, ": internal error: state ", k, " ",
                anvil::detail::describe(states[k]), " is not a contiguous tensor of the parameter's shape");
    states_[k].push_back(states[k]);
  }
}

void MultiTensorBatch::finish() {
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!work_params_[i].same(params_[i])) params_[i].copy_(work_params_[i]);
    params_[i].bump_version();  // the update wrote the parameter in place
  }
}

MultiTensorBatch& batch_for(Batches& batches, const BatchKey& key, size_t num_states) {
  auto it = batches.find(key);
  if (it == batches.end()) it = batches.emplace(key, MultiTensorBatch(num_states)).first;
  return it->second;
}

}  // namespace anvil::nn::optim::internal
