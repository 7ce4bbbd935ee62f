#pragma once
// Dropout: in training, zeroes each element with probability p and scales
// the rest by 1/(1-p); in eval, the identity.
#include "nn/module.h"

namespace anvil::nn {

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  double p;
};

}  // namespace anvil::nn
