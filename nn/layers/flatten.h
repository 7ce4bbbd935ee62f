#pragma once
/// @file
/// Flatten dims start_dim..end_dim into one (by default all but the batch dim).
#include <cstdint>
#include <string>

#include "nn/module.h"

namespace anvil::nn {

/// Flattens dims start_dim..end_dim into one, as torch.nn.Flatten (all but the batch dim by default).
class Flatten : public Module {
 public:
  /// Flattens dims start..end (negative dims count from the end).
  explicit Flatten(int64_t start = 1, int64_t end = -1) : Module("Flatten"), start_dim(start), end_dim(end) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_dim, end_dim); }
  std::string extra_repr() const override {
    return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
  }

  ///@{
  /// the first and the last dim merged
  int64_t start_dim, end_dim;
  ///@}
};

}  // namespace anvil::nn
