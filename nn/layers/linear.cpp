#include "nn/layers/linear.h"

#include <cmath>

#include "core/factory.h"
#include "core/ops/nn_ops.h"
#include "nn/init.h"

namespace anvil::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias) : Module("Linear"), in_features(in), out_features(out) {
  ANVIL_CHECK(in >= 0 && out >= 0, "Linear: expected non-negative sizes, got in_features ", in, ", out_features ", out);
  weight = register_parameter("weight", empty({out, in}));
  if (with_bias) bias = register_parameter("bias", empty({out}));
  reset_parameters();
}

void Linear::reset_parameters() {
  if (in_features > 0) init::kaiming_uniform_(weight, {.a = std::sqrt(5.0)});
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) {
  ANVIL_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) == in_features, "Linear: expected input [..., ", in_features,
              "], got ", x.defined() ? x.shape_str() : std::string("an undefined tensor"));
  return linear(x, weight, bias);
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + (bias.defined() ? "True" : "False");
}

}  // namespace anvil::nn
