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
enum class PadMode { Constant, Reflect, Replicate, Circular };
/// libtorch's spellings: F::PadFuncOptions({1, 1}).mode(anvil::kReflect).
inline constexpr PadMode kConstant = PadMode::Constant;
inline constexpr PadMode kReflect = PadMode::Reflect;
inline constexpr PadMode kReplicate = PadMode::Replicate;
inline constexpr PadMode kCircular = PadMode::Circular;
/// pad lists (before, after) pairs from the last dim backwards, as PyTorch's:
/// {left, right} pads dim -1, {left, right, top, bottom} dims -1 and -2.
/// Constant takes negative amounts (they crop); the others need 0 <= amount,
/// and Reflect amount < size (Circular amount <= size) of that dim.
Tensor pad(const Tensor& x, const Shape& pad, PadMode mode = PadMode::Constant, double value = 0.0);

// --- resampling (x [N, C, H, W]; nearest also [N, C, L] and [N, C, D, H, W]) ---
enum class InterpolateMode { Nearest, Linear, Bilinear };
inline constexpr InterpolateMode kNearest = InterpolateMode::Nearest;
inline constexpr InterpolateMode kLinear = InterpolateMode::Linear;
inline constexpr InterpolateMode kBilinear = InterpolateMode::Bilinear;
struct InterpolateOptions {
  std::vector<int64_t> size = {};  ///< one per spatial dim (or one for all)
  std::vector<double> scale_factor = {};  ///< one per spatial dim (or one for all); exactly one of the two
  InterpolateMode mode = InterpolateMode::Nearest;
  std::optional<bool> align_corners = std::nullopt;  ///< (bi)linear only; default false
};
Tensor interpolate(const Tensor& x, const InterpolateOptions& o);
/// x [*, C * r^2, H, W] -> [*, C, H * r, W * r] (sub-pixel convolution's
/// rearrangement), and its inverse; views and one copy (core/ops/nn/pixel_shuffle.cpp).
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);

// --- convolution ---
struct Conv1dOptions {
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
};
/// x [N, Cin, L] or [Cin, L], weight [Cout, Cin/groups, k]: conv2d with H = 1.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv1dOptions& o = {});
struct ConvTranspose2dOptions {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, output_padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};
/// x [N, Cin, H, W] or [Cin, H, W], weight [Cin, Cout/groups, kH, kW]: the
/// adjoint of conv2d (its input gradient), output size
/// (H - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1.
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose2dOptions& o = {});

// --- pooling ---
struct Pool1dOptions {
  int64_t kernel = 2;
  int64_t stride = 0;  ///< 0: same as kernel
  int64_t padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;  ///< avg only
};
/// x [N, C, L] or [C, L]: the 2-D pools with H = 1.
Tensor max_pool1d(const Tensor& x, const Pool1dOptions& o);
Tensor avg_pool1d(const Tensor& x, const Pool1dOptions& o);
/// PyTorch's windows (cell i covers [floor(i*L/out), ceil((i+1)*L/out))), any sizes.
Tensor adaptive_max_pool1d(const Tensor& x, int64_t output_size);  ///< [N, C, L] or [C, L]
Tensor adaptive_max_pool2d(const Tensor& x, std::array<int64_t, 2> output_size);  ///< [N, C, H, W] or [C, H, W]
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size);

// --- normalisation ---
/// x [N, C, *] normalised over each group of C/num_groups channels (and *).
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
/// x * rsqrt(mean(x^2 over normalized_shape) + eps) * weight; eps defaults to
/// the dtype's machine epsilon, as PyTorch's.
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);
struct InstanceNormOptions {
  bool use_input_stats = true;
  double momentum = 0.1;
  double eps = 1e-5;
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
enum class KLDivReduction { None, BatchMean, Sum, Mean };
/// libtorch's reduction spellings, for both the common Reduction and kl_div's:
/// .reduction(anvil::kSum), .reduction(anvil::kBatchMean) (kl_div only).
struct ReductionName {
  Reduction common;
  KLDivReduction kl;
  constexpr operator Reduction() const { return common; }  // NOLINT: implicit, as libtorch's enum tags
  constexpr operator KLDivReduction() const { return kl; }  // NOLINT
};
inline constexpr ReductionName kNone{Reduction::None, KLDivReduction::None};
inline constexpr ReductionName kMean{Reduction::Mean, KLDivReduction::Mean};
inline constexpr ReductionName kSum{Reduction::Sum, KLDivReduction::Sum};
inline constexpr KLDivReduction kBatchMean = KLDivReduction::BatchMean;
/// target * (log target - input) with input log-probabilities; log_target: target given as log-probabilities.
Tensor kl_div(const Tensor& input, const Tensor& target, KLDivReduction reduction = KLDivReduction::Mean,
              bool log_target = false);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean, double delta = 1.0);
/// sum(x1 * x2, dim) / (max(|x1|, eps) * max(|x2|, eps)), x1 and x2 broadcast.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
/// ||x1 - x2 + eps||_p over the last dim, x1 and x2 broadcast.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6, bool keepdim = false);

}  // namespace anvil
