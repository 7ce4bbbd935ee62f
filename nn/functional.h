#pragma once
/// @file
/// nn::functional: the stateless forms of the layers, activations and losses,
/// as torch.nn.functional. Most are the core ops re-exported under this name
/// (so `namespace F = anvil::nn::functional;` gives one place to look); the
/// few with no core op (adaptive pooling, attention, BCE on probabilities) are
/// composed from core ops here.
///
///     namespace F = anvil::nn::functional;
///     Tensor loss = F::cross_entropy(model->forward(x), y, {.label_smoothing = 0.1});
#include <optional>

#include "core/base/option_field.h"
#include "core/ops/elementwise.h"
#include "core/ops/indexing.h"
#include "core/ops/nn_ops.h"
#include "core/ops/reduce.h"
#include "core/ops/shape.h"
#include "core/tensor.h"
#include "nn/layers/size2.h"

namespace anvil::nn::functional {

// --- activations ---
using anvil::gelu;
using anvil::GeluApprox;
// leaky_relu, elu, softplus (with their FuncOptions), mish, hardswish: nn/functional_options.h.
using anvil::log_softmax;
using anvil::relu;
using anvil::sigmoid;
using anvil::silu;
using anvil::softmax;
using anvil::tanh;
/// The gated linear unit: a * sigmoid(b), where a and b are the first and the
/// second half of x along dim (whose size must be even), as torch's F.glu.
/// F::glu(x, F::GLUFuncOptions(1)) is in nn/functional_options.h.
Tensor glu(const Tensor& x, int64_t dim = -1);
/// libtorch's forms that take the dim as options: F::softmax(x, F::SoftmaxFuncOptions(1)).
struct SoftmaxFuncOptions {
  ANVIL_OPTION(SoftmaxFuncOptions, int64_t, dim) = -1;  ///< the dim softmax runs along
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;  ///< libtorch's name: log_softmax takes the same options.
/// softmax(x, o.dim).
inline Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& o) { return anvil::softmax(x, o.dim); }
/// log_softmax(x, o.dim).
inline Tensor log_softmax(const Tensor& x, const SoftmaxFuncOptions& o) { return anvil::log_softmax(x, o.dim); }

// --- layers ---
// Conv2dFuncOptions, MaxPool2dFuncOptions and AvgPool2dFuncOptions (libtorch's
// forms, the bias in the options) are in nn/functional_options.h.
using anvil::avg_pool2d;
using anvil::batch_norm;
using anvil::BatchNormOptions;
using anvil::conv2d;
using anvil::dropout;
using anvil::embedding;
using anvil::flatten;
using anvil::layer_norm;
using anvil::linear;
using anvil::max_pool2d;
using anvil::Pool2dOptions;
/// libtorch's forms that take their settings as options.
struct DropoutFuncOptions {
  ANVIL_OPTION(DropoutFuncOptions, double, p) = 0.5;  ///< probability of zeroing an element
  ANVIL_OPTION(DropoutFuncOptions, bool, training) = true;  ///< apply dropout (false: the identity)
};
/// dropout(x, o.p, o.training).
inline Tensor dropout(const Tensor& x, const DropoutFuncOptions& o) { return anvil::dropout(x, o.p, o.training); }
/// layer_norm's settings as libtorch's F::LayerNormFuncOptions.
struct LayerNormFuncOptions {
  ANVIL_OPTION(LayerNormFuncOptions, Shape, normalized_shape) = {};  ///< the trailing dims normalised over
  ANVIL_OPTION(LayerNormFuncOptions, Tensor, weight) = {};  ///< optional elementwise scale, of normalized_shape
  ANVIL_OPTION(LayerNormFuncOptions, Tensor, bias) = {};  ///< optional elementwise shift, of normalized_shape
  ANVIL_OPTION(LayerNormFuncOptions, double, eps) = 1e-5;  ///< added to the variance for numerical stability
};
/// layer_norm with the settings in `o`.
inline Tensor layer_norm(const Tensor& x, const LayerNormFuncOptions& o) {
  return anvil::layer_norm(x, o.normalized_shape(), o.weight, o.bias, o.eps);
}

/// Averages [N, C, H, W] or [C, H, W] into output_size with PyTorch's windows
/// (cell i covers [floor(i*H/oh), ceil((i+1)*H/oh))), for any input size.
Tensor adaptive_avg_pool2d(const Tensor& x, Size2 output_size);

// softmax(q @ k^T * scale + mask) @ v, fused (core/ops/nn_ops.h has the details).
using anvil::AttentionOptions;
using anvil::scaled_dot_product_attention;

// --- losses ---
using anvil::binary_cross_entropy_with_logits;
using anvil::cross_entropy;
using anvil::CrossEntropyOptions;
using CrossEntropyFuncOptions = anvil::CrossEntropyOptions;  ///< libtorch's name
using anvil::mse_loss;
using anvil::nll_loss;
using anvil::Reduction;
/// On probabilities in [0, 1]; log terms clamped at -100 as PyTorch, so p = 0
/// or 1 gives a finite loss. Prefer binary_cross_entropy_with_logits.
Tensor binary_cross_entropy(const Tensor& probs, const Tensor& target, Reduction reduction = Reduction::Mean);
/// Mean (or sum, or none) of |input - target|.
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// libtorch's option forms: F::mse_loss(x, y, F::MSELossFuncOptions(anvil::kSum)).
struct MSELossFuncOptions {
  ANVIL_OPTION(MSELossFuncOptions, Reduction, reduction) = Reduction::Mean;  ///< None, Mean or Sum
};
/// l1_loss's reduction as libtorch's F::L1LossFuncOptions.
struct L1LossFuncOptions {
  ANVIL_OPTION(L1LossFuncOptions, Reduction, reduction) = Reduction::Mean;  ///< None, Mean or Sum
};
/// mse_loss with the reduction in `o`.
inline Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o) {
  return anvil::mse_loss(input, target, o.reduction);
}
/// l1_loss with the reduction in `o`.
inline Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o) {
  return l1_loss(input, target, o.reduction());
}

}  // namespace anvil::nn::functional

// libtorch's option forms of pad, interpolate, conv1d, group_norm, kl_div, ...
#include "nn/functional_options.h"  // IWYU pragma: export
