#pragma once
/// @file
/// Linear: y = x @ weight^T + bias, over the last dim of x.
#include <cstdint>

#include "core/base/option_field.h"
#include "nn/module.h"

namespace anvil::nn {

/// The constructor's arguments as libtorch's options: LinearOptions(3, 4).bias(false).
struct LinearOptions {
  ANVIL_OPTION(LinearOptions, int64_t, in_features) = 0;  ///< features of the input's last dim
  ANVIL_OPTION(LinearOptions, int64_t, out_features) = 0;  ///< features of the output's last dim
  ANVIL_OPTION(LinearOptions, bool, bias) = true;  ///< whether to add a learned bias
};

/// A fully connected layer, y = x @ weight^T + bias, as torch.nn.Linear.
class Linear : public Module {
 public:
  ///@{
  /// weight [out, in] and bias [out], initialised as PyTorch does: uniform in
  /// +-1/sqrt(in) (kaiming_uniform with a = sqrt(5)).
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  explicit Linear(const LinearOptions& o) : Linear(o.in_features, o.out_features, o.bias) {}
  ///@}

  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();  ///< Re-draws weight and bias as PyTorch initialises them.

  ///@{
  /// the input's and the output's last-dim sizes
  int64_t in_features, out_features;
  ///@}
  ///@{
  /// bias undefined when built without one
  Tensor weight, bias;
  ///@}
};

}  // namespace anvil::nn
