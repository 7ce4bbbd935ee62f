#pragma once
/// @file
/// Dropout: in training, zeroes each element with probability p and scales
/// the rest by 1/(1-p); in eval, the identity.
#include "core/base/option_field.h"
#include "nn/module.h"

namespace anvil::nn {

/// The constructor's argument as libtorch's options: DropoutOptions().p(0.2).
struct DropoutOptions {
  ANVIL_OPTION(DropoutOptions, double, p) = 0.5;  ///< probability of zeroing an element
};

/// Inverted dropout, as torch.nn.Dropout: active in training mode only.
class Dropout : public Module {
 public:
  explicit Dropout(double probability = 0.5);  ///< Zeroes with probability `probability`.
  explicit Dropout(const DropoutOptions& o) : Dropout(double(o.p)) {}  ///< Zeroes with probability o.p.
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  double p;  ///< probability of zeroing an element
};

}  // namespace anvil::nn
