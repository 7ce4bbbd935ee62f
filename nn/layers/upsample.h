#pragma once
/// @file
/// Resampling layers: Upsample (the interpolate op), PixelShuffle and
/// PixelUnshuffle (sub-pixel rearrangement), and Identity.
///
///     auto up = std::make_shared<nn::Upsample>(nn::UpsampleOptions().scale_factor({2.0}).mode(anvil::kBilinear));
///     auto ps = std::make_shared<nn::PixelShuffle>(3);  // [N, 9C, H, W] -> [N, C, 3H, 3W]
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/base/option_field.h"
#include "core/ops/nn_functional.h"
#include "nn/module.h"

namespace anvil::nn {

/// Returns its input, as torch.nn.Identity (a placeholder where a layer is optional).
class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};

/// Upsample's settings, as libtorch's nn::UpsampleOptions.
struct UpsampleOptions {
  ANVIL_OPTION(UpsampleOptions, std::vector<int64_t>, size) = {};  ///< one per spatial dim, or one for all
  ANVIL_OPTION(UpsampleOptions, std::vector<double>, scale_factor) = {};  ///< exactly one of size and scale_factor
  ANVIL_OPTION(UpsampleOptions, InterpolateMode, mode) = InterpolateMode::Nearest;  ///< Nearest, Linear or Bilinear
  ANVIL_OPTION(UpsampleOptions, std::optional<bool>, align_corners) = std::nullopt;  ///< (bi)linear only
};

/// Resamples the spatial dims with interpolate, as torch.nn.Upsample.
class Upsample : public Module {
 public:
  explicit Upsample(const UpsampleOptions& options = {});  ///< As `options` say (a size or a scale factor is needed).
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;

  UpsampleOptions options;  ///< the settings it was built with
};

/// PixelShuffle's setting, as libtorch's nn::PixelShuffleOptions.
struct PixelShuffleOptions {
  ANVIL_OPTION(PixelShuffleOptions, int64_t, upscale_factor) = 1;  ///< r: [*, C * r^2, H, W] -> [*, C, H * r, W * r]
};

/// pixel_shuffle as a module: [*, C * r^2, H, W] -> [*, C, H * r, W * r].
class PixelShuffle : public Module {
 public:
  explicit PixelShuffle(int64_t upscale_factor);  ///< With r = `upscale_factor`.
  /// With r = options.upscale_factor.
  explicit PixelShuffle(const PixelShuffleOptions& options) : PixelShuffle(options.upscale_factor) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override { return "upscale_factor=" + std::to_string(upscale_factor); }

  int64_t upscale_factor;  ///< r
};

/// pixel_unshuffle as a module: [*, C, H * r, W * r] -> [*, C * r^2, H, W].
class PixelUnshuffle : public Module {
 public:
  explicit PixelUnshuffle(int64_t downscale_factor);  ///< With r = `downscale_factor`.
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override { return "downscale_factor=" + std::to_string(downscale_factor); }

  int64_t downscale_factor;  ///< r
};

}  // namespace anvil::nn
