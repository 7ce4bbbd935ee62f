#pragma once
/// @file
/// Neural-network ops. Losses take a Reduction; cross_entropy fuses
/// log_softmax with the negative log-likelihood. Implemented in core/ops/nn/.
/// Second-order gradients (create_graph) work through every op here except
/// max_pool2d, which refuses them with an error.
#include <array>
#include <optional>

#include "core/base/option_field.h"
#include "core/tensor.h"

namespace anvil {

/// How a loss reduces its per-element values: none (same shape), mean or sum.
enum class Reduction { None, Mean, Sum };

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});  ///< x @ weight^T + bias

/// conv2d's geometry, each per spatial dim (H, W).
struct Conv2dOptions {
  ///@{
  /// stride, zero padding of each side, and spacing of the kernel's taps
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  ///@}
  int64_t groups = 1;  ///< input and output channels split into this many independent groups
};
/// x [N, Cin, H, W] or [Cin, H, W], weight [Cout, Cin/groups, kH, kW], bias [Cout]: 2-D cross-correlation, as PyTorch's
/// conv2d.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv2dOptions& o = {});

/// max_pool2d's and avg_pool2d's window, per spatial dim (H, W).
struct Pool2dOptions {
  std::array<int64_t, 2> kernel{2, 2};  ///< window size
  std::array<int64_t, 2> stride{0, 0};  ///< 0: same as kernel
  std::array<int64_t, 2> padding{0, 0};  ///< implicit padding of each side (-inf for max, 0 for avg)
  bool count_include_pad = true;  ///< avg: whether padded positions count in the divisor
  /// Output size rounds up (a last window may start in the right padding but
  /// not beyond it), as PyTorch's ceil_mode.
  bool ceil_mode = false;
};
/// x [N, C, H, W] or [C, H, W]: the largest value of each window.
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& o);
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& o);  ///< x [N, C, H, W] or [C, H, W]: the mean of each window.

/// batch_norm's mode and constants.
struct BatchNormOptions {
  /// normalise with the batch's statistics (and update the running ones) rather than the running ones
  bool training = true;
  double momentum = 0.1;  ///< weight of the new batch statistics in the running ones
  double eps = 1e-5;  ///< added to the variance for numerical stability
};
/// x [N, C, ...]; running stats are updated in place in training mode.
Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, const BatchNormOptions& o = {});
/// Normalises over the trailing dims given by normalized_shape.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
/// The residual add of a pre-norm transformer block fused with the layer norm
/// that follows it: sum = x + residual and out = layer_norm(sum, ...), in one
/// pass over memory on CUDA. Gradients are those of the two ops written apart.
struct AddLayerNormResult {
  ///@{
  /// x + residual, and layer_norm of it
  Tensor sum, out;
  ///@}
};
/// Returns x + residual and layer_norm(x + residual) in one fused pass where a kernel exists.
AddLayerNormResult add_layer_norm(const Tensor& x, const Tensor& residual, const Shape& normalized_shape,
                                  const Tensor& weight = {}, const Tensor& bias = {}, double eps = 1e-5);
/// scaled_dot_product_attention's mask, dropout, causality and scale.
struct AttentionOptions {
  Tensor attn_mask = {};  ///< bool (true = may attend) or float (added to the scores); broadcasts to [..., L, S]
  double dropout_p = 0.0;  ///< applied to the attention weights (pass 0 in eval, as PyTorch)
  bool is_causal = false;  ///< query i attends to keys 0..i only (top-left alignment, as PyTorch)
  std::optional<double> scale = std::nullopt;  ///< default 1/sqrt(E)
};
/// softmax(q @ k^T * scale + mask) @ v for q [..., L, E], k [..., S, E],
/// v [..., S, Ev] (leading dims broadcast), as one fused op (core/ops/nn/attention.cpp):
/// the [L, S] scores are never materialised, forward or backward. A query row
/// with no allowed key gives 0 (not PyTorch's math-path NaN) and no gradient.
/// Dropout is applied inside the fused kernels, to the probabilities the math
/// path's dropout(softmax(...)) would drop under the same seed. Composed from
/// matmul/softmax instead when the mask requires grad (or dropout_p is 1).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o = {});
/// Inverted dropout: in training, zeroes with probability p and scales by 1/(1-p).
Tensor dropout(const Tensor& x, double p, bool training = true);

/// cross_entropy's and nll_loss's settings; also libtorch's chained form:
/// CrossEntropyOptions().ignore_index(0).
struct CrossEntropyOptions {
  /// None, Mean (over non-ignored targets) or Sum
  ANVIL_OPTION(CrossEntropyOptions, Reduction, reduction) = Reduction::Mean;
  /// targets equal to it contribute nothing, to the loss or to the mean's count
  ANVIL_OPTION(CrossEntropyOptions, int64_t, ignore_index) = -100;
  /// weight of the uniform distribution mixed into the targets (0: none)
  ANVIL_OPTION(CrossEntropyOptions, double, label_smoothing) = 0.0;
};
///@{
/// logits [N, C], [C] (0-d target) or [N, C, d1, ...] (targets [N, d1, ...]);
/// targets int64 class indices. Mean averages over the targets that are not
/// ignore_index (NaN when all are), with or without label smoothing.
/// nll_loss takes log-probabilities of the same shapes and the same options.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& o = {});
Tensor nll_loss(const Tensor& log_probs, const Tensor& targets, const CrossEntropyOptions& o = {});
///@}
/// input and target must have the same shape (no silent broadcasting).
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// Sigmoid and binary cross-entropy in one numerically stable op; target holds probabilities of x's shape.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction = Reduction::Mean);

}  // namespace anvil
