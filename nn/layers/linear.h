#pragma once
// Linear: y = x @ weight^T + bias, over the last dim of x.
#include <cstdint>

#include "nn/module.h"

namespace anvil::nn {

class Linear : public Module {
 public:
  // weight [out, in] and bias [out], initialised as PyTorch does: uniform in
  // +-1/sqrt(in) (kaiming_uniform with a = sqrt(5)).
  Linear(int64_t in_features, int64_t out_features, bool bias = true);

  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when built without one
};

}  // namespace anvil::nn
