#include "nn/layers/layernorm.h"

#include <sstream>

#include "core/factory.h"
#include "core/ops/nn_ops.h"
#include "nn/init.h"

namespace anvil::nn {

LayerNorm::LayerNorm(const LayerNormOptions& o) : Module("LayerNorm"), options(o) {
  const Shape& shape = o.normalized_shape();
  ANVIL_CHECK(!shape.empty(), "LayerNorm: normalized_shape must have at least one dim");
  for (int64_t s : shape) ANVIL_CHECK(s > 0, "LayerNorm: expected positive sizes in normalized_shape, got ", shape);
  if (o.elementwise_affine) {
    weight = register_parameter("weight", empty(shape));
    if (o.bias) bias = register_parameter("bias", empty(shape));
  }
  reset_parameters();
}

void LayerNorm::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}

Tensor LayerNorm::forward(const Tensor& x) {
  return layer_norm(x, options.normalized_shape, weight, bias, options.eps);
}

std::string LayerNorm::extra_repr() const {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < options.normalized_shape.size(); ++i) os << (i ? ", " : "") << options.normalized_shape[i];
  os << (options.normalized_shape.size() == 1 ? ",)" : ")") << ", eps=" << options.eps
     << ", elementwise_affine=" << (options.elementwise_affine ? "True" : "False");
  return os.str();
}

}  // namespace anvil::nn
