#pragma once
/// @file
/// BatchNorm2d over [N, C, H, W], BatchNorm1d over [N, C] or [N, C, L]. In training it normalises with the batch's
/// statistics and folds them into running_mean / running_var (unbiased
/// variance); in eval it uses the running statistics.
#include <cstdint>
#include <optional>

#include "core/base/option_field.h"
#include "nn/module.h"

namespace anvil::nn {

struct BatchNorm2dOptions {
  ANVIL_OPTION(BatchNorm2dOptions, int64_t, num_features) = 0;
  ANVIL_OPTION(BatchNorm2dOptions, double, eps) = 1e-5;
  /// Weight of the new batch in the running averages; nullopt gives the
  /// cumulative average (1 / num_batches_tracked), as PyTorch's momentum=None.
  ANVIL_OPTION(BatchNorm2dOptions, std::optional<double>, momentum) = 0.1;
  ANVIL_OPTION(BatchNorm2dOptions, bool, affine) = true;  ///< learnable weight (ones) and bias (zeros)
  ANVIL_OPTION(BatchNorm2dOptions, bool, track_running_stats) = true;  ///< without: batch statistics in eval too
};

/// BatchNorm1d takes the same settings.
using BatchNorm1dOptions = BatchNorm2dOptions;

/// What BatchNorm1d and BatchNorm2d share: parameters, running statistics and
/// their update; each checks its own input shape.
class BatchNormBase : public Module {
 public:
  std::string extra_repr() const override;
  void reset_running_stats();
  void reset_parameters();

  BatchNorm2dOptions options;
  ///@{
  /// [C], when affine
  Tensor weight, bias;
  ///@}
  ///@{
  /// [C], [C], int64 scalar; when tracking
  Tensor running_mean, running_var, num_batches_tracked;
  ///@}

 protected:
  BatchNormBase(const char* name, const BatchNorm2dOptions& options);
  Tensor normalize(const Tensor& x);  ///< x [N, C, ...], already checked
};

class BatchNorm2d : public BatchNormBase {
 public:
  explicit BatchNorm2d(int64_t num_features) : BatchNorm2d(BatchNorm2dOptions{.num_features = num_features}) {}
  explicit BatchNorm2d(const BatchNorm2dOptions& options) : BatchNormBase("BatchNorm2d", options) {}
  Tensor forward(const Tensor& x) override;
};

/// Over [N, C] (features) or [N, C, L] (sequences), statistics per channel C.
class BatchNorm1d : public BatchNormBase {
 public:
  explicit BatchNorm1d(int64_t num_features) : BatchNorm1d(BatchNorm1dOptions{.num_features = num_features}) {}
  explicit BatchNorm1d(const BatchNorm1dOptions& options) : BatchNormBase("BatchNorm1d", options) {}
  Tensor forward(const Tensor& x) override;
};

}  // namespace anvil::nn
