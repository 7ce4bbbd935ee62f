#pragma once
/// @file
/// The torch.nn.functional ops beyond nn_ops.h: padding, resampling, 1-D
/// convolution and pooling, transposed convolution, adaptive max pooling, the
/// group/instance/RMS norms, one_hot, and the smaller losses and distances.
/// Every one is composed from ops that have CPU and CUDA kernels (conv2d and
/// its input gradient, pool2d, layer_norm, batch_norm, index_select, reduce,
/// elementwise), so each runs on both backends and is differentiable through
/// them. Implemented in core/ops/nn/ (pad_interpolate.cpp, conv_pool_1d_adaptive.cpp,
/// group_instance_norm.cpp, rms_norm.cpp, loss_distance.cpp) and core/ops/nn/conv_pool.cpp.
/// nn/functional.h gives them libtorch's option structs.
#include <array>
#include <optional>
#include <vector>

#include "core/ops/nn_ops.h"
#include "core/tensor.h"

namespace anvil {

// --- padding ---
/// How pad fills: a constant, the mirror image (edge excluded), the edge value, or wrapping around.
enum class PadMode { Constant, Reflect, Replicate, Circular };
/// libtorch's spellings: F::PadFuncOptions({1, 1}).mode(anvil::kReflect).
inline constexpr PadMode kConstant = PadMode::Constant;
inline constexpr PadMode kReflect = PadMode::Reflect;  ///< PadMode::Reflect
inline constexpr PadMode kReplicate = PadMode::Replicate;  ///< PadMode::Replicate
inline constexpr PadMode kCircular = PadMode::Circular;  ///< PadMode::Circular
/// pad lists (before, after) pairs from the last dim backwards, as PyTorch's:
/// {left, right} pads dim -1, {left, right, top, bottom} dims -1 and -2.
/// Constant takes negative amounts (they crop); the others need 0 <= amount,
/// and Reflect amount < size (Circular amount <= size) of that dim.
Tensor pad(const Tensor& x, const Shape& pad, PadMode mode = PadMode::Constant, double value = 0.0);

// --- resampling (x [N, C, H, W]; nearest also [N, C, L] and [N, C, D, H, W]) ---
/// How interpolate resamples: nearest neighbour, linear or bilinear.
enum class InterpolateMode { Nearest, Linear, Bilinear };
inline constexpr InterpolateMode kNearest = InterpolateMode::Nearest;  ///< InterpolateMode::Nearest
inline constexpr InterpolateMode kLinear = InterpolateMode::Linear;  ///< InterpolateMode::Linear
inline constexpr InterpolateMode kBilinear = InterpolateMode::Bilinear;  ///< InterpolateMode::Bilinear
/// interpolate's output size (or scale) and mode, as torch.nn.functional.interpolate's.
struct InterpolateOptions {
  std::vector<int64_t> size = {};  ///< one per spatial dim (or one for all)
  std::vector<double> scale_factor = {};  ///< one per spatial dim (or one for all); exactly one of the two
  InterpolateMode mode = InterpolateMode::Nearest;  ///< Nearest, Linear or Bilinear
  std::optional<bool> align_corners = std::nullopt;  ///< (bi)linear only; default false
};
/// Resizes x's spatial dims by `o`, as torch.nn.functional.interpolate.
Tensor interpolate(const Tensor& x, const InterpolateOptions& o);
/// x [*, C * r^2, H, W] -> [*, C, H * r, W * r] (sub-pixel convolution's
/// rearrangement), and its inverse; views and one copy (core/ops/nn/pixel_shuffle.cpp).
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
/// pixel_shuffle's inverse: [*, C, H * r, W * r] -> [*, C * r^2, H, W].
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);

// --- convolution ---
/// conv1d's geometry.
struct Conv1dOptions {
  ///@{
  /// step, zero padding of each side, spacing of the kernel's taps, and channel groups
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
  ///@}
};
/// x [N, Cin, L] or [Cin, L], weight [Cout, Cin/groups, k]: conv2d with H = 1.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv1dOptions& o = {});
/// conv_transpose2d's geometry, each per spatial dim (H, W), as PyTorch's.
struct ConvTranspose2dOptions {
  ///@{
  /// stride, padding removed from each side, extra size added to one side, and spacing of the kernel's taps
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, output_padding{0, 0}, dilation{1, 1};
  ///@}
  int64_t groups = 1;  ///< input and output channels split into this many independent groups
};
/// x [N, Cin, H, W] or [Cin, H, W], weight [Cin, Cout/groups, kH, kW]: the
/// adjoint of conv2d (its input gradient), output size
/// (H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose2dOptions& o = {});

// --- pooling ---
/// max_pool1d's and avg_pool1d's window.
struct Pool1dOptions {
  int64_t kernel = 2;  ///< window size
  int64_t stride = 0;  ///< 0: same as kernel
  int64_t padding = 0;  ///< implicit padding of each side
  bool ceil_mode = false;  ///< round the output size up rather than down
  bool count_include_pad = true;  ///< avg only
};
/// x [N, C, L] or [C, L]: the 2-D pools with H = 1.
Tensor max_pool1d(const Tensor& x, const Pool1dOptions& o);
Tensor avg_pool1d(const Tensor& x, const Pool1dOptions& o);  ///< x [N, C, L] or [C, L]: the mean of each window.
/// PyTorch's windows (cell i covers [floor(i*L/out), ceil((i+1)*L/out))), any sizes.
Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size);  ///< [N, C, L] or [C, L]
Tensor adaptive_max_pool2d(const Tensor& x, std::array<int64_t, 2> output_size);  ///< [N, C, H, W] or [C, H, W]
/// [N, C, L] or [C, L]: the mean of each of output_size cells, PyTorch's windows
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size);

// --- normalisation ---
/// x [N, C, *] normalised over each group of C/num_groups channels (and *).
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
/// x * rsqrt(mean(x^2 over normalized_shape) + eps) * weight; eps defaults to
/// the dtype's machine epsilon, as PyTorch's.
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);
/// instance_norm's statistics mode and constants.
struct InstanceNormOptions {
  bool use_input_stats = true;  ///< normalise with each instance's own statistics (else with the running ones)
  double momentum = 0.1;  ///< weight of the new statistics in the running ones
  double eps = 1e-5;  ///< added to the variance for numerical stability
};
/// x [N, C, *]: each (sample, channel) normalised over *. Running stats (if
/// given) are updated with the batch average when use_input_stats, and used
/// instead of the input's statistics when not.
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = {}, const Tensor& running_var = {},
                     const Tensor& weight = {}, const Tensor& bias = {}, const InstanceNormOptions& o = {});

// --- embedding ---
/// embedding(weight, indices) whose rows at padding_idx (negative counts from
/// the end) get no gradient, as PyTorch's padding_idx.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx);

// --- encoding ---
/// int64 [*] -> int64 [*, num_classes]; num_classes -1: max(x) + 1.
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);

// --- losses (input and target of one shape) and distances ---
/// kl_div's reduction: none, sum over the batch divided by its size, sum, or mean over elements.
enum class KLDivReduction { None, BatchMean, Sum, Mean };
/// libtorch's reduction spellings, for both the common Reduction and kl_div's:
/// .reduction(anvil::kSum), .reduction(anvil::kBatchMean) (kl_div only).
struct ReductionName {
  Reduction common;  ///< the Reduction this tag stands for
  KLDivReduction kl;  ///< the KLDivReduction this tag stands for
  /// As a Reduction (implicit, as libtorch's enum tags).
  constexpr operator Reduction() const { return common; }  // NOLINT: implicit, as libtorch's enum tags
  /// As a KLDivReduction (implicit).
  constexpr operator KLDivReduction() const { return kl; }  // NOLINT
};
/// No reduction (Reduction::None, KLDivReduction::None).
inline constexpr ReductionName kNone{Reduction::None, KLDivReduction::None};
/// The mean (Reduction::Mean, KLDivReduction::Mean).
inline constexpr ReductionName kMean{Reduction::Mean, KLDivReduction::Mean};
/// The sum (Reduction::Sum, KLDivReduction::Sum).
inline constexpr ReductionName kSum{Reduction::Sum, KLDivReduction::Sum};
inline constexpr KLDivReduction kBatchMean = KLDivReduction::BatchMean;  ///< kl_div's sum divided by the batch size.
/// target * (log target - input) with input log-probabilities; log_target: target given as log-probabilities.
Tensor kl_div(const Tensor& input, const Tensor& target, KLDivReduction reduction = KLDivReduction::Mean,
              bool log_target = false);
/// Squared error below `beta` (divided by beta), absolute error minus beta / 2 above, as PyTorch's smooth_l1_loss.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0);
/// Squared error / 2 below `delta`, delta * (|error| - delta / 2) above: smooth_l1_loss scaled by delta.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean, double delta = 1.0);
/// sum(x1 * x2, dim) / (max(|x1|, eps) * max(|x2|, eps)), x1 and x2 broadcast.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
/// ||x1 - x2 + eps||_p over the last dim, x1 and x2 broadcast.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6, bool keepdim = false);

}  // namespace anvil
