#include "nn/layers/rmsnorm.h"

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops/nn_functional.h"

namespace anvil::nn {

RMSNorm::RMSNorm(const RMSNormOptions& o) : Module("RMSNorm"), options(o) {
  ANVIL_CHECK(!o.normalized_shape.empty(), "RMSNorm: expected a non-empty normalized_shape");
  if (o.elementwise_affine) weight = register_parameter("weight", anvil::empty(o.normalized_shape()));
  reset_parameters();
}

void RMSNorm::reset_parameters() {
  NoGradGuard no_grad;
  if (weight.defined()) weight.fill_(1.0);
}

Tensor RMSNorm::forward(const Tensor& x) { return rms_norm(x, options.normalized_shape, weight, options.eps); }

std::string RMSNorm::extra_repr() const {
  std::string s = "(";
  for (size_t i = 0; i < options.normalized_shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(options.normalized_shape[i]);
  s += options.normalized_shape.size() == 1 ? ",)" : ")";
  if (options.eps.has_value()) s += ", eps=" + std::to_string(*options.eps);
  return s + (options.elementwise_affine ? ", elementwise_affine=True" : ", elementwise_affine=False");
}

}  // namespace anvil::nn
