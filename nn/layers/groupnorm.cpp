#include "nn/layers/groupnorm.h"

#include "core/autograd/grad_mode.h"
#include "core/factory.h"
#include "core/ops/nn_functional.h"

namespace anvil::nn {

GroupNorm::GroupNorm(const GroupNormOptions& o) : Module("GroupNorm"), options(o) {
  ANVIL_CHECK(o.num_groups > 0 && o.num_channels > 0 && o.num_channels % o.num_groups == 0,
              "GroupNorm: expected num_groups (", static_cast<int64_t>(o.num_groups), ") to divide num_channels (",
              static_cast<int64_t>(o.num_channels), "), both positive");
  if (o.affine) {
    weight = register_parameter("weight", empty({o.num_channels}));
    bias = register_parameter("bias", empty({o.num_channels}));
  }
  reset_parameters();
}

void GroupNorm::reset_parameters() {
  NoGradGuard no_grad;
  if (weight.defined()) weight.fill_(1.0);
  if (bias.defined()) bias.zero_();
}

Tensor GroupNorm::forward(const Tensor& x) { return group_norm(x, options.num_groups, weight, bias, options.eps); }

std::string GroupNorm::extra_repr() const {
  return std::to_string(options.num_groups) + ", " + std::to_string(options.num_channels) +
         ", eps=" + std::to_string(options.eps) + (options.affine ? ", affine=True" : ", affine=False");
}

}  // namespace anvil::nn
