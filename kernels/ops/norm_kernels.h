#pragma once
// The normalizations: batch norm over channels, layer norm and RMS norm over
// rows (the last dims flattened to cols), and the residual add fused with
// the layer norm after it.
#include "kernels/view.h"

namespace anvil {

struct BatchNormParams {
  bool training = true;
  double momentum = 0.1;
  double eps = 1e-5;
};

namespace kernel {

// in [N, C, *]; mean/invstd [C] float32 are written in training and read in
// eval. running_mean/var (may be null) are updated in training.
struct BatchNorm {
  static constexpr const char* name = "batch_norm";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& save_mean, const View& save_invstd, const View& in,
                         const View* weight, const View* bias, const View* running_mean, const View* running_var,
                         const BatchNormParams& p);
};

struct BatchNormBackward {
  static constexpr const char* name = "batch_norm_backward";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                         const View& in, const View* weight, const View& save_mean, const View& save_invstd,
                         const BatchNormParams& p);
};

// in [rows, cols] normalised over cols; mean/rstd [rows] float32.
struct LayerNorm {
  static constexpr const char* name = "layer_norm";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& mean, const View& rstd, const View& in, const View* weight,
                         const View* bias, double eps);
};

struct LayerNormBackward {
  static constexpr const char* name = "layer_norm_backward";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& grad_in, const View* grad_weight, const View* grad_bias, const View& grad_out,
                         const View& in, const View& mean, const View& rstd, const View* weight);
};

// Residual add fused with the layer norm that follows it (a transformer
// block's h = x + attn(...); ln2(h)): sum_out = x + residual (rounded to the
// dtype), out = layer_norm(sum_out) exactly as layer_norm would compute it.
// x, residual, sum_out, out [rows, cols] of one dtype; mean/rstd as
// layer_norm. Without a kernel, core adds and then runs layer_norm.
struct AddLayerNorm {
  static constexpr const char* name = "add_layer_norm";
  static constexpr bool has_fallback = true;
  using Signature = void(const View& out, const View& sum_out, const View& mean, const View& rstd, const View& x,
                         const View& residual, const View* weight, const View* bias, double eps);
};

// RMS norm over the cols of in [rows, cols]: out = in * rstd * weight with
// rstd [rows] float32 = 1 / sqrt(mean(in^2) + eps); weight [cols] or null.
// Without a kernel, core composes it from ops.
struct RmsNorm {
  static constexpr const char* name = "rms_norm";
  static constexpr bool has_fallback = true;
  using Signature = void(const View& out, const View& rstd, const View& in, const View* weight, double eps);
};

// Its gradient in one pass over each row: with r recomputed from the row in
// the accumulation precision (not the forward's float32 rstd, so float64
// stays exact), grad_in = r * (g w - in * r^2 * mean(g w in)) [rows, cols]
// (null data: not wanted) and grad_weight [cols] = sum over rows of
// g * in * r (null: not wanted). grad_out, in, grad_in: one dtype.
struct RmsNormBackward {
  static constexpr const char* name = "rms_norm_backward";
  static constexpr bool has_fallback = true;
  using Signature = void(const View& grad_in, const View* grad_weight, const View& grad_out, const View& in,
                         const View* weight, double eps);
};

}  // namespace kernel
}  // namespace anvil
