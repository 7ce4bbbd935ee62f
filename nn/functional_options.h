#pragma once
/// @file
/// nn::functional's forms of the ops in core/ops/nn_functional.h, with
/// libtorch's option structs (each also an aggregate, anvil's spelling):
///
///     namespace F = anvil::nn::functional;
///     F::pad(x, F::PadFuncOptions({1, 1, 2, 0}).mode(anvil::kReflect));
///     F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 8}).mode(anvil::kBilinear)
///                           .align_corners(false));
///     F::kl_div(log_p, q, F::KLDivFuncOptions().reduction(anvil::kBatchMean));
///
/// Included by nn/functional.h; the core ops themselves (anvil::pad(x, {1, 1}),
/// F::group_norm(x, 4, w, b)) are there too.
#include <optional>
#include <vector>

#include "core/base/error.h"
#include "core/base/option_field.h"
#include "core/ops/einsum.h"
#include "core/ops/elementwise.h"
#include "core/ops/nn_functional.h"
#include "core/ops/nn_ops.h"
#include "nn/layers/activation_options.h"
#include "nn/layers/size2.h"

namespace anvil::nn::functional {

using anvil::adaptive_avg_pool1d;
using anvil::adaptive_max_pool1d;
using anvil::adaptive_max_pool2d;
using anvil::avg_pool1d;
using anvil::conv1d;
using anvil::conv2d;
using anvil::conv_transpose2d;
using anvil::cosine_similarity;
using anvil::einsum;
using anvil::elu;
using anvil::group_norm;
using anvil::hardswish;
using anvil::huber_loss;
using anvil::instance_norm;
using anvil::interpolate;
using anvil::kl_div;
using anvil::leaky_relu;
using anvil::max_pool1d;
using anvil::mish;
using anvil::one_hot;
using anvil::pad;
using anvil::pairwise_distance;
using anvil::pixel_shuffle;
using anvil::pixel_unshuffle;
using anvil::rms_norm;
using anvil::smooth_l1_loss;
using anvil::softplus;

/// pad's settings, as libtorch's F::PadFuncOptions.
struct PadFuncOptions {
  ANVIL_OPTION(PadFuncOptions, Shape, pad) = {};  ///< (before, after) amounts from the last dim backwards
  ANVIL_OPTION(PadFuncOptions, PadMode, mode) = PadMode::Constant;  ///< Constant, Reflect, Replicate or Circular
  ANVIL_OPTION(PadFuncOptions, double, value) = 0.0;  ///< the fill of Constant
};
/// pad(x, o.pad, o.mode, o.value).
inline Tensor pad(const Tensor& x, const PadFuncOptions& o) { return anvil::pad(x, o.pad, o.mode, o.value); }

/// interpolate's settings, as libtorch's F::InterpolateFuncOptions.
struct InterpolateFuncOptions {
  /// the output's spatial size (one per dim, or one for all)
  ANVIL_OPTION(InterpolateFuncOptions, std::optional<std::vector<int64_t>>, size) = std::nullopt;
  /// the factor per spatial dim (or one for all); exactly one of size and scale_factor
  ANVIL_OPTION(InterpolateFuncOptions, std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  /// Nearest, Linear or Bilinear
  ANVIL_OPTION(InterpolateFuncOptions, InterpolateMode, mode) = InterpolateMode::Nearest;
  /// (bi)linear only; default false
  ANVIL_OPTION(InterpolateFuncOptions, std::optional<bool>, align_corners) = std::nullopt;
};
/// interpolate with the settings in `o`.
inline Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& o) {
  InterpolateOptions c;
  if (o.size.has_value()) c.size = *o.size;
  if (o.scale_factor.has_value()) c.scale_factor = *o.scale_factor;
  c.mode = o.mode;
  c.align_corners = o.align_corners;
  return anvil::interpolate(x, c);
}

// --- convolution (libtorch keeps the bias in the options) ---
/// conv1d's settings, as libtorch's F::Conv1dFuncOptions (the bias among them).
struct Conv1dFuncOptions {
  ANVIL_OPTION(Conv1dFuncOptions, Tensor, bias) = {};  ///< optional bias [Cout]
  ANVIL_OPTION(Conv1dFuncOptions, int64_t, stride) = 1;  ///< step between windows
  ANVIL_OPTION(Conv1dFuncOptions, int64_t, padding) = 0;  ///< zeros added on each side
  ANVIL_OPTION(Conv1dFuncOptions, int64_t, dilation) = 1;  ///< spacing between the kernel's taps
  ANVIL_OPTION(Conv1dFuncOptions, int64_t, groups) = 1;  ///< channels split into this many independent groups
};
/// conv1d with the settings (and the bias) in `o`.
inline Tensor conv1d(const Tensor& x, const Tensor& weight, const Conv1dFuncOptions& o) {
  return anvil::conv1d(x, weight, o.bias, anvil::Conv1dOptions{o.stride, o.padding, o.dilation, o.groups});
}
/// F::conv2d(x, w, F::Conv2dFuncOptions().stride(2).padding(1).bias(b)). The
/// core form, conv2d(x, w, bias, anvil::Conv2dOptions{...}), is here too.
struct Conv2dFuncOptions {
  ANVIL_OPTION(Conv2dFuncOptions, Tensor, bias) = {};  ///< optional bias [Cout]
  ANVIL_OPTION(Conv2dFuncOptions, Size2, stride) = 1;  ///< step between windows, (height, width)
  ANVIL_OPTION(Conv2dFuncOptions, Size2, padding) = 0;  ///< zeros added on each side
  ANVIL_OPTION(Conv2dFuncOptions, Size2, dilation) = 1;  ///< spacing between the kernel's taps
  ANVIL_OPTION(Conv2dFuncOptions, int64_t, groups) = 1;  ///< channels split into this many independent groups
};
/// conv2d with the settings (and the bias) in `o`.
inline Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dFuncOptions& o) {
  return anvil::conv2d(x, weight, o.bias,
                       anvil::Conv2dOptions{o.stride.array(), o.padding.array(), o.dilation.array(), o.groups});
}
/// The bias as an argument beside the options (anvil's earlier spelling of
/// Conv2dFuncOptions, which held no bias): one bias, not two.
inline Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dFuncOptions& o) {
  ANVIL_CHECK(!(bias.defined() && o.bias.defined()), "conv2d: a bias given both as an argument (", bias.shape(),
              ") and in Conv2dFuncOptions (", o.bias.shape(), "); pass one");
  Conv2dFuncOptions with_bias = o;
  if (bias.defined()) with_bias.bias = bias;
  return conv2d(x, weight, with_bias);
}
/// conv_transpose2d's settings, as libtorch's F::ConvTranspose2dFuncOptions (the bias among them).
struct ConvTranspose2dFuncOptions {
  ANVIL_OPTION(ConvTranspose2dFuncOptions, Tensor, bias) = {};  ///< optional bias [Cout]
  ANVIL_OPTION(ConvTranspose2dFuncOptions, Size2, stride) = 1;  ///< step between input positions in the output
  ANVIL_OPTION(ConvTranspose2dFuncOptions, Size2, padding) = 0;  ///< removed from each side of the output
  ANVIL_OPTION(ConvTranspose2dFuncOptions, Size2, output_padding) = 0;  ///< extra size added to one side of the output
  ANVIL_OPTION(ConvTranspose2dFuncOptions, int64_t, groups) = 1;  ///< channels split into this many independent groups
  ANVIL_OPTION(ConvTranspose2dFuncOptions, Size2, dilation) = 1;  ///< spacing between the kernel's taps
};
/// conv_transpose2d with the settings (and the bias) in `o`.
inline Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const ConvTranspose2dFuncOptions& o) {
  anvil::ConvTranspose2dOptions c;
  c.stride = o.stride.array();
  c.padding = o.padding.array();
  c.output_padding = o.output_padding.array();
  c.dilation = o.dilation.array();
  c.groups = o.groups;
  return anvil::conv_transpose2d(x, weight, o.bias, c);
}

// --- pooling ---
/// max_pool1d's settings, as libtorch's F::MaxPool1dFuncOptions.
struct MaxPool1dFuncOptions {
  ANVIL_OPTION(MaxPool1dFuncOptions, int64_t, kernel_size) = 2;  ///< window size
  ANVIL_OPTION(MaxPool1dFuncOptions, std::optional<int64_t>, stride) = std::nullopt;  ///< default: kernel_size
  ANVIL_OPTION(MaxPool1dFuncOptions, int64_t, padding) = 0;  ///< implicit -inf padding on each side
  ANVIL_OPTION(MaxPool1dFuncOptions, bool, ceil_mode) = false;  ///< round the output size up rather than down
};
/// avg_pool1d's settings, as libtorch's F::AvgPool1dFuncOptions.
struct AvgPool1dFuncOptions {
  ANVIL_OPTION(AvgPool1dFuncOptions, int64_t, kernel_size) = 2;  ///< window size
  ANVIL_OPTION(AvgPool1dFuncOptions, std::optional<int64_t>, stride) = std::nullopt;  ///< default: kernel_size
  ANVIL_OPTION(AvgPool1dFuncOptions, int64_t, padding) = 0;  ///< implicit zero padding on each side
  ANVIL_OPTION(AvgPool1dFuncOptions, bool, ceil_mode) = false;  ///< round the output size up rather than down
  ANVIL_OPTION(AvgPool1dFuncOptions, bool, count_include_pad) = true;  ///< whether padded zeros count in the average
};
/// max_pool1d with the settings in `o`.
inline Tensor max_pool1d(const Tensor& x, const MaxPool1dFuncOptions& o) {
  return anvil::max_pool1d(x, {o.kernel_size, o.stride.value_or(o.kernel_size), o.padding, o.ceil_mode, true});
}
/// avg_pool1d with the settings in `o`.
inline Tensor avg_pool1d(const Tensor& x, const AvgPool1dFuncOptions& o) {
  return anvil::avg_pool1d(
      x, {o.kernel_size, o.stride.value_or(o.kernel_size), o.padding, o.ceil_mode, o.count_include_pad});
}
/// F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1)); the core
/// form, max_pool2d(x, Pool2dOptions{...}), is here too.
struct MaxPool2dFuncOptions {
  ANVIL_OPTION(MaxPool2dFuncOptions, Size2, kernel_size) = 2;  ///< the window's (height, width)
  ANVIL_OPTION(MaxPool2dFuncOptions, Size2, stride) = 0;  ///< 0: kernel_size, as libtorch's default
  ANVIL_OPTION(MaxPool2dFuncOptions, Size2, padding) = 0;  ///< implicit -inf padding on each side
  ANVIL_OPTION(MaxPool2dFuncOptions, Size2, dilation) = 1;  ///< only 1: anvil's pooling kernels have no dilation
  ANVIL_OPTION(MaxPool2dFuncOptions, bool, ceil_mode) = false;  ///< round the output size up rather than down
};
/// avg_pool2d's settings, as libtorch's F::AvgPool2dFuncOptions.
struct AvgPool2dFuncOptions {
  ANVIL_OPTION(AvgPool2dFuncOptions, Size2, kernel_size) = 2;  ///< the window's (height, width)
  ANVIL_OPTION(AvgPool2dFuncOptions, Size2, stride) = 0;  ///< 0: kernel_size
  ANVIL_OPTION(AvgPool2dFuncOptions, Size2, padding) = 0;  ///< implicit zero padding on each side
  ANVIL_OPTION(AvgPool2dFuncOptions, bool, ceil_mode) = false;  ///< round the output size up rather than down
  ANVIL_OPTION(AvgPool2dFuncOptions, bool, count_include_pad) = true;  ///< whether padded zeros count in the average
};
/// max_pool2d with the settings in `o` (dilation 1 only).
inline Tensor max_pool2d(const Tensor& x, const MaxPool2dFuncOptions& o) {
  ANVIL_CHECK(o.dilation == Size2(1), "max_pool2d: dilation ", o.dilation.str(), " is not supported (only 1); input ",
              x.shape());
  return anvil::max_pool2d(x, {o.kernel_size.array(), o.stride.array(), o.padding.array(), true, o.ceil_mode});
}
/// avg_pool2d with the settings in `o`.
inline Tensor avg_pool2d(const Tensor& x, const AvgPool2dFuncOptions& o) {
  return anvil::avg_pool2d(
      x, {o.kernel_size.array(), o.stride.array(), o.padding.array(), o.count_include_pad, o.ceil_mode});
}
/// adaptive_max_pool2d's setting, as libtorch's F::AdaptiveMaxPool2dFuncOptions.
struct AdaptiveMaxPool2dFuncOptions {
  ANVIL_OPTION(AdaptiveMaxPool2dFuncOptions, Size2, output_size) = 1;  ///< the output's (height, width)
};
/// adaptive_max_pool2d to o.output_size.
inline Tensor adaptive_max_pool2d(const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o) {
  return anvil::adaptive_max_pool2d(x, o.output_size.array());
}

// --- normalisation ---
/// group_norm's settings, as libtorch's F::GroupNormFuncOptions.
struct GroupNormFuncOptions {
  ANVIL_OPTION(GroupNormFuncOptions, int64_t, num_groups) = 1;  ///< groups the channels are split into
  ANVIL_OPTION(GroupNormFuncOptions, Tensor, weight) = {};  ///< optional per-channel scale [C]
  ANVIL_OPTION(GroupNormFuncOptions, Tensor, bias) = {};  ///< optional per-channel shift [C]
  ANVIL_OPTION(GroupNormFuncOptions, double, eps) = 1e-5;  ///< added to the variance for numerical stability
};
/// group_norm with the settings in `o`.
inline Tensor group_norm(const Tensor& x, const GroupNormFuncOptions& o) {
  return anvil::group_norm(x, o.num_groups, o.weight, o.bias, o.eps);
}
/// rms_norm's settings, as libtorch's F::RMSNormFuncOptions.
struct RMSNormFuncOptions {
  ANVIL_OPTION(RMSNormFuncOptions, Shape, normalized_shape) = {};  ///< the trailing dims normalised over
  ANVIL_OPTION(RMSNormFuncOptions, Tensor, weight) = {};  ///< optional elementwise scale, of normalized_shape
  ANVIL_OPTION(RMSNormFuncOptions, std::optional<double>, eps) = std::nullopt;  ///< default: the dtype's epsilon
};
/// rms_norm with the settings in `o`.
inline Tensor rms_norm(const Tensor& x, const RMSNormFuncOptions& o) {
  return anvil::rms_norm(x, o.normalized_shape, o.weight, o.eps);
}
/// instance_norm's settings, as libtorch's F::InstanceNormFuncOptions.
struct InstanceNormFuncOptions {
  /// optional running mean [C], updated when use_input_stats
  ANVIL_OPTION(InstanceNormFuncOptions, Tensor, running_mean) = {};
  /// optional running variance [C], updated when use_input_stats
  ANVIL_OPTION(InstanceNormFuncOptions, Tensor, running_var) = {};
  ANVIL_OPTION(InstanceNormFuncOptions, Tensor, weight) = {};  ///< optional per-channel scale [C]
  ANVIL_OPTION(InstanceNormFuncOptions, Tensor, bias) = {};  ///< optional per-channel shift [C]
  /// normalise with each instance's statistics (else the running ones)
  ANVIL_OPTION(InstanceNormFuncOptions, bool, use_input_stats) = true;
  ANVIL_OPTION(InstanceNormFuncOptions, double, momentum) = 0.1;  ///< weight of the new statistics in the running ones
  ANVIL_OPTION(InstanceNormFuncOptions, double, eps) = 1e-5;  ///< added to the variance for numerical stability
};
/// instance_norm with the settings in `o`.
inline Tensor instance_norm(const Tensor& x, const InstanceNormFuncOptions& o) {
  return anvil::instance_norm(x, o.running_mean, o.running_var, o.weight, o.bias,
                              {o.use_input_stats, o.momentum, o.eps});
}

// --- embedding (libtorch's argument order: indices, then weight) ---
/// embedding's setting, as libtorch's F::EmbeddingFuncOptions.
struct EmbeddingFuncOptions {
  /// a row that gets no gradient (negative counts from the end)
  ANVIL_OPTION(EmbeddingFuncOptions, std::optional<int64_t>, padding_idx) = std::nullopt;
};
/// Rows of `weight` picked by `indices`, in libtorch's argument order.
inline Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingFuncOptions& o) {
  return o.padding_idx.has_value() ? anvil::embedding(weight, indices, *o.padding_idx)
                                   : anvil::embedding(weight, indices);
}

// --- parametrised activations (mish and hardswish take none) ---
using LeakyReLUFuncOptions = nn::LeakyReLUOptions;  ///< libtorch's name for leaky_relu's settings.
using ELUFuncOptions = nn::ELUOptions;  ///< libtorch's name for elu's settings.
using SoftplusFuncOptions = nn::SoftplusOptions;  ///< libtorch's name for softplus's settings.
/// inplace: the result is written into x (its autograd history rebased), as libtorch's.
inline Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& o) {
  return nn::apply_in_place_if(o.inplace, x, [&](const Tensor& in) { return anvil::leaky_relu(in, o.negative_slope); });
}
/// elu with the settings in `o`, in place with o.inplace.
inline Tensor elu(const Tensor& x, const ELUFuncOptions& o) {
  return nn::apply_in_place_if(o.inplace, x, [&](const Tensor& in) { return anvil::elu(in, o.alpha); });
}
/// softplus with the settings in `o`.
inline Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o) {
  return anvil::softplus(x, o.beta, o.threshold);
}
using GLUFuncOptions = nn::GLUOptions;  ///< libtorch's name for glu's setting.
inline Tensor glu(const Tensor& x, const GLUFuncOptions& o) { return glu(x, o.dim()); }  ///< glu(x, o.dim).

// --- losses and distances ---
/// kl_div's settings, as libtorch's F::KLDivFuncOptions.
struct KLDivFuncOptions {
  ANVIL_OPTION(KLDivFuncOptions, KLDivReduction, reduction) = KLDivReduction::Mean;  ///< None, BatchMean, Sum or Mean
  ANVIL_OPTION(KLDivFuncOptions, bool, log_target) = false;  ///< the target given as log-probabilities
};
/// kl_div with the settings in `o`.
inline Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o) {
  return anvil::kl_div(input, target, o.reduction, o.log_target);
}
/// smooth_l1_loss's settings, as libtorch's F::SmoothL1LossFuncOptions.
struct SmoothL1LossFuncOptions {
  ANVIL_OPTION(SmoothL1LossFuncOptions, Reduction, reduction) = Reduction::Mean;  ///< None, Mean or Sum
  ANVIL_OPTION(SmoothL1LossFuncOptions, double, beta) = 1.0;  ///< where the loss turns from squared to absolute
};
/// smooth_l1_loss with the settings in `o`.
inline Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o) {
  return anvil::smooth_l1_loss(input, target, o.reduction, o.beta);
}
/// huber_loss's settings, as libtorch's F::HuberLossFuncOptions.
struct HuberLossFuncOptions {
  ANVIL_OPTION(HuberLossFuncOptions, Reduction, reduction) = Reduction::Mean;  ///< None, Mean or Sum
  ANVIL_OPTION(HuberLossFuncOptions, double, delta) = 1.0;  ///< where the loss turns from squared to linear
};
/// huber_loss with the settings in `o`.
inline Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o) {
  return anvil::huber_loss(input, target, o.reduction, o.delta);
}
/// cosine_similarity's settings, as libtorch's F::CosineSimilarityFuncOptions.
struct CosineSimilarityFuncOptions {
  ANVIL_OPTION(CosineSimilarityFuncOptions, int64_t, dim) = 1;  ///< the dim the vectors lie along
  ANVIL_OPTION(CosineSimilarityFuncOptions, double, eps) = 1e-8;  ///< lower bound of each norm
};
/// cosine_similarity with the settings in `o`.
inline Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& o) {
  return anvil::cosine_similarity(x1, x2, o.dim, o.eps);
}
/// pairwise_distance's settings, as libtorch's F::PairwiseDistanceFuncOptions.
struct PairwiseDistanceFuncOptions {
  ANVIL_OPTION(PairwiseDistanceFuncOptions, double, p) = 2.0;  ///< the norm's order
  ANVIL_OPTION(PairwiseDistanceFuncOptions, double, eps) = 1e-6;  ///< added to the difference
  ANVIL_OPTION(PairwiseDistanceFuncOptions, bool, keepdim) = false;  ///< keep the reduced dim
};
/// pairwise_distance with the settings in `o`.
inline Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& o) {
  return anvil::pairwise_distance(x1, x2, o.p, o.eps, o.keepdim);
}

}  // namespace anvil::nn::functional
