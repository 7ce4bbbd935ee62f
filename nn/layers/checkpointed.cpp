#include "nn/layers/checkpointed.h"

#include "core/autograd/checkpoint.h"

namespace anvil::nn {

Checkpointed::Checkpointed(std::shared_ptr<Module> m) : Module("Checkpointed") {
  ANVIL_CHECK(m != nullptr, "Checkpointed: the wrapped module is null");
  module = register_module("module", std::move(m));
}

Tensor Checkpointed::forward(const Tensor& x) {
  // The lambda holds the module (not `this`): the graph may outlive the wrapper.
  return autograd::checkpoint([m = module](const std::vector<Tensor>& in) { return m->forward(in[0]); }, {x});
}

Tensor Checkpointed::forward_inputs(const std::vector<Tensor>& inputs) {
  if (inputs.size() == 1) return forward(inputs[0]);
  return autograd::checkpoint([m = module](const std::vector<Tensor>& in) { return m->forward_inputs(in); }, inputs);
}

}  // namespace anvil::nn
