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

struct PadFuncOptions {
  ANVIL_OPTION(PadFuncOptions, Shape, pad) = {};
  ANVIL_OPTION(PadFuncOptions, PadMode, mode) = PadMode::Constant;
  ANVIL_OPTION(PadFuncOptions, double, value) = 0.0;
};
inline Tensor pad(const Tensor& x, const PadFuncOptions& o) { return anvil::pad(x, o.pad, o.mode, o.value); }

struct InterpolateFuncOptions {
  ANVIL_OPTION(InterpolateFuncOptions, std::optional<std::vector<int64_t>>, size) = std::nullopt;
  ANVIL_OPTION(InterpolateFuncOptions, std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  ANVIL_OPTION(InterpolateFuncOptions, InterpolateMode, mode) = InterpolateMode::Nearest;
  ANVIL_OPTION(InterpolateFuncOptions, std::optional<bool>, align_corners) = std::nullopt;
};
inline Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& o) {
  InterpolateOptions c;
  if (o.size.has_value()) c.size = *o.size;
  if (o.scale_factor.has_value()) c.scale_factor = *o.scale_factor;
  c.mode = o.mode;
  c.align_corners = o.align_corners;
  return anvil::interpolate(x, c);
}

// --- convolution (libtorch keeps the bias in the options) ---
struct Conv1dFuncOptions {
  ANVIL_OPTION(Conv1dFuncOptions, Tensor, bias) = {};
  ANVIL_OPTION(Conv1dFuncOptions, int64_t, stride) = 1;
  ANVIL_OPTION(Conv1dFuncOptions, int64_t, padding) = 0;
  ANVIL_OPTION(Conv1dFuncOptions, int64_t, dilation) = 1;
  ANVIL_OPTION(Conv1dFuncOptions, int64_t, groups) = 1;
};
inline Tensor conv1d(const Tensor& x, const Tensor& weight, const Conv1dFuncOptions& o) {
  return anvil::conv1d(x, weight, o.bias, anvil::Conv1dOptions{o.stride, o.padding, o.dilation, o.groups});
}
/// F::conv2d(x, w, F::Conv2dFuncOptions().stride(2).padding(1).bias(b)). The
/// core form, conv2d(x, w, bias, anvil::Conv2dOptions{...}), is here too.
struct Conv2dFuncOptions {
  ANVIL_OPTION(Conv2dFuncOptions, Tensor, bias) = {};
  ANVIL_OPTION(Conv2dFuncOptions, Size2, stride) = 1;
  ANVIL_OPTION(Conv2dFuncOptions, Size2, padding) = 0;
  ANVIL_OPTION(Conv2dFuncOptions, Size2, dilation) = 1;
  ANVIL_OPTION(Conv2dFuncOptions, int64_t, groups) = 1;
};
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
struct ConvTranspose2dFuncOptions {
  ANVIL_OPTION(ConvTranspose2dFuncOptions, Tensor, bias) = {};
  ANVIL_OPTION(ConvTranspose2dFuncOptions, Size2, stride) = 1;
  ANVIL_OPTION(ConvTranspose2dFuncOptions, Size2, padding) = 0;
  ANVIL_OPTION(ConvTranspose2dFuncOptions, Size2, output_padding) = 0;
  ANVIL_OPTION(ConvTranspose2dFuncOptions, int64_t, groups) = 1;
  ANVIL_OPTION(ConvTranspose2dFuncOptions, Size2, dilation) = 1;
};
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
struct MaxPool1dFuncOptions {
  ANVIL_OPTION(MaxPool1dFuncOptions, int64_t, kernel_size) = 2;
  ANVIL_OPTION(MaxPool1dFuncOptions, std::optional<int64_t>, stride) = std::nullopt;  ///< default: kernel_size
  ANVIL_OPTION(MaxPool1dFuncOptions, int64_t, padding) = 0;
  ANVIL_OPTION(MaxPool1dFuncOptions, bool, ceil_mode) = false;
};
struct AvgPool1dFuncOptions {
  ANVIL_OPTION(AvgPool1dFuncOptions, int64_t, kernel_size) = 2;
  ANVIL_OPTION(AvgPool1dFuncOptions, std::optional<int64_t>, stride) = std::nullopt;  ///< default: kernel_size
  ANVIL_OPTION(AvgPool1dFuncOptions, int64_t, padding) = 0;
  ANVIL_OPTION(AvgPool1dFuncOptions, bool, ceil_mode) = false;
  ANVIL_OPTION(AvgPool1dFuncOptions, bool, count_include_pad) = true;
};
inline Tensor max_pool1d(const Tensor& x, const MaxPool1dFuncOptions& o) {
  return anvil::max_pool1d(x, {o.kernel_size, o.stride.value_or(o.kernel_size), o.padding, o.ceil_mode, true});
}
inline Tensor avg_pool1d(const Tensor& x, const AvgPool1dFuncOptions& o) {
  return anvil::avg_pool1d(
      x, {o.kernel_size, o.stride.value_or(o.kernel_size), o.padding, o.ceil_mode, o.count_include_pad});
}
/// F::max_pool2d(x, F::MaxPool2dFuncOptions(3).stride(2).padding(1)); the core
/// form, max_pool2d(x, Pool2dOptions{...}), is here too.
struct MaxPool2dFuncOptions {
  ANVIL_OPTION(MaxPool2dFuncOptions, Size2, kernel_size) = 2;
  ANVIL_OPTION(MaxPool2dFuncOptions, Size2, stride) = 0;  ///< 0: kernel_size, as libtorch's default
  ANVIL_OPTION(MaxPool2dFuncOptions, Size2, padding) = 0;
  ANVIL_OPTION(MaxPool2dFuncOptions, Size2, dilation) = 1;  ///< only 1: anvil's pooling kernels have no dilation
  ANVIL_OPTION(MaxPool2dFuncOptions, bool, ceil_mode) = false;
};
struct AvgPool2dFuncOptions {
  ANVIL_OPTION(AvgPool2dFuncOptions, Size2, kernel_size) = 2;
  ANVIL_OPTION(AvgPool2dFuncOptions, Size2, stride) = 0;  ///< 0: kernel_size
  ANVIL_OPTION(AvgPool2dFuncOptions, Size2, padding) = 0;
  ANVIL_OPTION(AvgPool2dFuncOptions, bool, ceil_mode) = false;
  ANVIL_OPTION(AvgPool2dFuncOptions, bool, count_include_pad) = true;
};
inline Tensor max_pool2d(const Tensor& x, const MaxPool2dFuncOptions& o) {
  ANVIL_CHECK(o.dilation == Size2(1), "max_pool2d: dilation ", o.dilation.str(), " is not supported (only 1); input ",
              x.shape());
  return anvil::max_pool2d(x, {o.kernel_size.array(), o.stride.array(), o.padding.array(), true, o.ceil_mode});
}
inline Tensor avg_pool2d(const Tensor& x, const AvgPool2dFuncOptions& o) {
  return anvil::avg_pool2d(
      x, {o.kernel_size.array(), o.stride.array(), o.padding.array(), o.count_include_pad, o.ceil_mode});
}
struct AdaptiveMaxPool2dFuncOptions {
  ANVIL_OPTION(AdaptiveMaxPool2dFuncOptions, Size2, output_size) = 1;
};
inline Tensor adaptive_max_pool2d(const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o) {
  return anvil::adaptive_max_pool2d(x, o.output_size.array());
}

// --- normalisation ---
struct GroupNormFuncOptions {
  ANVIL_OPTION(GroupNormFuncOptions, int64_t, num_groups) = 1;
  ANVIL_OPTION(GroupNormFuncOptions, Tensor, weight) = {};
  ANVIL_OPTION(GroupNormFuncOptions, Tensor, bias) = {};
  ANVIL_OPTION(GroupNormFuncOptions, double, eps) = 1e-5;
};
inline Tensor group_norm(const Tensor& x, const GroupNormFuncOptions& o) {
  return anvil::group_norm(x, o.num_groups, o.weight, o.bias, o.eps);
}
struct RMSNormFuncOptions {
  ANVIL_OPTION(RMSNormFuncOptions, Shape, normalized_shape) = {};
  ANVIL_OPTION(RMSNormFuncOptions, Tensor, weight) = {};
  ANVIL_OPTION(RMSNormFuncOptions, std::optional<double>, eps) = std::nullopt;  ///< default: the dtype's epsilon
};
inline Tensor rms_norm(const Tensor& x, const RMSNormFuncOptions& o) {
  return anvil::rms_norm(x, o.normalized_shape, o.weight, o.eps);
}
struct InstanceNormFuncOptions {
  ANVIL_OPTION(InstanceNormFuncOptions, Tensor, running_mean) = {};
  ANVIL_OPTION(InstanceNormFuncOptions, Tensor, running_var) = {};
  ANVIL_OPTION(InstanceNormFuncOptions, Tensor, weight) = {};
  ANVIL_OPTION(InstanceNormFuncOptions, Tensor, bias) = {};
  ANVIL_OPTION(InstanceNormFuncOptions, bool, use_input_stats) = true;
  ANVIL_OPTION(InstanceNormFuncOptions, double, momentum) = 0.1;
  ANVIL_OPTION(InstanceNormFuncOptions, double, eps) = 1e-5;
};
inline Tensor instance_norm(const Tensor& x, const InstanceNormFuncOptions& o) {
  return anvil::instance_norm(x, o.running_mean, o.running_var, o.weight, o.bias,
                              {o.use_input_stats, o.momentum, o.eps});
}

// --- embedding (libtorch's argument order: indices, then weight) ---
struct EmbeddingFuncOptions {
  ANVIL_OPTION(EmbeddingFuncOptions, std::optional<int64_t>, padding_idx) = std::nullopt;
};
inline Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingFuncOptions& o) {
  return o.padding_idx.has_value() ? anvil::embedding(weight, indices, *o.padding_idx)
                                   : anvil::embedding(weight, indices);
}

// --- parametrised activations (mish and hardswish take none) ---
using LeakyReLUFuncOptions = nn::LeakyReLUOptions;
using ELUFuncOptions = nn::ELUOptions;
using SoftplusFuncOptions = nn::SoftplusOptions;
/// inplace: the result is written into x (its autograd history rebased), as libtorch's.
inline Tensor leaky_relu(const Tensor& x, const LeakyReLUFuncOptions& o) {
  return nn::apply_in_place_if(o.inplace, x, [&](const Tensor& in) { return anvil::leaky_relu(in, o.negative_slope); });
}
inline Tensor elu(const Tensor& x, const ELUFuncOptions& o) {
  return nn::apply_in_place_if(o.inplace, x, [&](const Tensor& in) { return anvil::elu(in, o.alpha); });
}
inline Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o) {
  return anvil::softplus(x, o.beta, o.threshold);
}
using GLUFuncOptions = nn::GLUOptions;
inline Tensor glu(const Tensor& x, const GLUFuncOptions& o) { return glu(x, o.dim()); }

// --- losses and distances ---
struct KLDivFuncOptions {
  ANVIL_OPTION(KLDivFuncOptions, KLDivReduction, reduction) = KLDivReduction::Mean;
  ANVIL_OPTION(KLDivFuncOptions, bool, log_target) = false;
};
inline Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o) {
  return anvil::kl_div(input, target, o.reduction, o.log_target);
}
struct SmoothL1LossFuncOptions {
  ANVIL_OPTION(SmoothL1LossFuncOptions, Reduction, reduction) = Reduction::Mean;
  ANVIL_OPTION(SmoothL1LossFuncOptions, double, beta) = 1.0;
};
inline Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o) {
  return anvil::smooth_l1_loss(input, target, o.reduction, o.beta);
}
struct HuberLossFuncOptions {
  ANVIL_OPTION(HuberLossFuncOptions, Reduction, reduction) = Reduction::Mean;
  ANVIL_OPTION(HuberLossFuncOptions, double, delta) = 1.0;
};
inline Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o) {
  return anvil::huber_loss(input, target, o.reduction, o.delta);
}
struct CosineSimilarityFuncOptions {
  ANVIL_OPTION(CosineSimilarityFuncOptions, int64_t, dim) = 1;
  ANVIL_OPTION(CosineSimilarityFuncOptions, double, eps) = 1e-8;
};
inline Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& o) {
  return anvil::cosine_similarity(x1, x2, o.dim, o.eps);
}
struct PairwiseDistanceFuncOptions {
  ANVIL_OPTION(PairwiseDistanceFuncOptions, double, p) = 2.0;
  ANVIL_OPTION(PairwiseDistanceFuncOptions, double, eps) = 1e-6;
  ANVIL_OPTION(PairwiseDistanceFuncOptions, bool, keepdim) = false;
};
inline Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& o) {
  return anvil::pairwise_distance(x1, x2, o.p, o.eps, o.keepdim);
}

}  // namespace anvil::nn::functional
