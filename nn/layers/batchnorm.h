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

/// BatchNorm2d's (and BatchNorm1d's) settings, as libtorch's nn::BatchNorm2dOptions.
struct BatchNorm2dOptions {
  ANVIL_OPTION(BatchNorm2dOptions, int64_t, num_features) = 0;  ///< channels C
  ANVIL_OPTION(BatchNorm2dOptions, double, eps) = 1e-5;  ///< added to the variance for numerical stability
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
  void reset_running_stats();  ///< Running mean 0, variance 1, batch count 0.
  void reset_parameters();  ///< reset_running_stats(), weight 1 and bias 0.

  BatchNorm2dOptions options;  ///< the settings it was built with
  ///@{
  /// [C], when affine
  Tensor weight, bias;
  ///@}
  ///@{
  /// [C], [C], int64 scalar; when tracking
  Tensor running_mean, running_var, num_batches_tracked;
  ///@}

 protected:
  /// Registers the parameters and buffers `options` asks for.
  BatchNormBase(const char* name, const BatchNorm2dOptions& options);
  Tensor normalize(const Tensor& x);  ///< x [N, C, ...], already checked
};

/// Batch normalisation over [N, C, H, W], statistics per channel, as torch.nn.BatchNorm2d.
class BatchNorm2d : public BatchNormBase {
 public:
  /// For `num_features` channels, the other settings default.
  explicit BatchNorm2d(int64_t num_features) : BatchNorm2d(BatchNorm2dOptions{.num_features = num_features}) {}
  /// As `o` says.
  explicit BatchNorm2d(const BatchNorm2dOptions& o) : BatchNormBase("BatchNorm2d", o) {}
  Tensor forward(const Tensor& x) override;
};

/// Over [N, C] (features) or [N, C, L] (sequences), statistics per channel C.
class BatchNorm1d : public BatchNormBase {
 public:
  /// For `num_features` channels, the other settings default.
  explicit BatchNorm1d(int64_t num_features) : BatchNorm1d(BatchNorm1dOptions{.num_features = num_features}) {}
  /// As `o` says.
  explicit BatchNorm1d(const BatchNorm1dOptions& o) : BatchNormBase("BatchNorm1d", o) {}
  Tensor forward(const Tensor& x) override;
};

}  // namespace anvil::nn
