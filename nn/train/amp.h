#pragma once
/// @file
/// Mixed precision: compute in bfloat16 or float16 while the optimizer keeps
/// float32 "master" weights, and dynamic loss scaling for float16.
///
/// Per-op mixed precision is core/autocast.h (AutocastGuard), which the
/// Trainer uses by default. What follows is the whole-model path, as
/// "O2"-style AMP does it (TrainerOptions::amp_mode = AmpMode::WholeModel):
///
///     - MasterWeights swaps the data behind each float32 parameter for a
///       low-precision copy before the forward pass, collects the low-precision
///       gradients into float32 after each backward, and swaps the float32
///       masters back (with their float32 gradients) before the optimizer step.
///       The optimizer's parameter handles and its state never change dtype.
///     - The Trainer casts floating inputs to the compute dtype; tasks compute
///       their loss in float32 (ClassificationTask casts the logits).
/// Buffers (e.g. BatchNorm running statistics) stay float32.
///
/// float16 has a narrow range, so small gradients underflow to zero: the
/// GradScaler multiplies the loss by a large scale before backward, divides
/// the gradients by it before the step, skips steps whose gradients overflowed
/// (inf/nan) and adapts the scale (torch.cuda.amp.GradScaler's algorithm).
///
///     train::GradScaler scaler;
///     scaler.scale(loss).backward();
///     scaler.step(optimizer);  // unscales; skipped if any gradient is inf/nan
///     scaler.update();         // halves the scale after a skip, doubles it after 2000 good steps
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"
#include "nn/optim/optimizer.h"

namespace anvil::nn::train {

/// The Trainer's compute precision: float32, or mixed with bfloat16 or float16.
enum class Precision { FP32, BF16, FP16 };

/// How the Trainer applies BF16/FP16. Autocast (the default): per op, as
/// torch.autocast (core/autocast.h): parameters stay float32, matmuls, linears,
/// convolutions and attention run in the low precision, norms, softmax,
/// reductions and losses in float32. WholeModel: the "O2" path below, the
/// whole forward in the low precision on cast copies of the parameters.
enum class AmpMode { Autocast, WholeModel };

const char* precision_name(Precision p);  ///< "fp32", "bf16", "fp16"
DType compute_dtype(Precision p);  ///< float32, bfloat16, float16

/// GradScaler's settings, as torch.cuda.amp.GradScaler's.
struct GradScalerOptions {
  double init_scale = 65536.0;  ///< 2^16
  double growth_factor = 2.0;  ///< the scale's factor after growth_interval good steps
  double backoff_factor = 0.5;  ///< the scale's factor after a step with inf or nan gradients
  int64_t growth_interval = 2000;  ///< consecutive good steps before the scale grows
  bool enabled = true;  ///< disabled: every method passes through
};

/// The scaler's position, for checkpoints.
struct GradScalerState {
  double scale = 65536.0;  ///< the current loss scale
  int64_t growth_tracker = 0;  ///< good steps since the last change
};

/// Dynamic loss scaling for float16 training, as torch.cuda.amp.GradScaler (see the file comment).
class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});  ///< With `options`.

  /// loss * scale (a float32 loss is advised: a float16 one overflows easily).
  Tensor scale(const Tensor& loss) const;
  ///@{
  /// Divides every gradient by the scale in place (once per step; a second call
  /// before update() is an error, as in PyTorch) and records whether any was
  /// inf or nan. Returns that. Call it before clipping gradients.
  bool unscale_(optim::Optimizer& optimizer);
  bool unscale_(const std::vector<Tensor>& parameters);
  ///@}
  /// Unscales if not done yet, then steps the optimizer unless a gradient was
  /// inf/nan. Returns whether the optimizer stepped.
  bool step(optim::Optimizer& optimizer);
  /// After each step: backoff after a skipped step, growth after
  /// growth_interval good ones in a row.
  void update();

  double get_scale() const { return state_.scale; }  ///< The current scale.
  bool is_enabled() const { return options_.enabled; }  ///< Whether scaling is on (else every method passes through).
  bool found_inf() const { return found_inf_; }  ///< of the current step
  const GradScalerOptions& options() const { return options_; }  ///< The settings it was made with.
  GradScalerState state_dict() const { return state_; }  ///< The scale and growth tracker, to resume.
  void load_state_dict(const GradScalerState& state);  ///< Resumes from state_dict().

 private:
  GradScalerOptions options_;
  GradScalerState state_;
  bool unscaled_ = false;
  bool found_inf_ = false;
};

/// True when any gradient of `parameters` holds an inf or nan (one host read).
bool any_grad_non_finite(const std::vector<Tensor>& parameters);

/// Float32 master weights behind a low-precision model: the whole-model ("O2") mixed precision path (see the file
/// comment).
class MasterWeights {
 public:
  /// Float32 parameters take part; others are left alone.
  MasterWeights(std::vector<Tensor> parameters, DType compute_dtype);
  DType compute_dtype() const { return dtype_; }  ///< The low-precision dtype.

  /// The parameters now hold low-precision copies of the masters (no-op if
  /// they already do). Their gradients are cleared.
  void cast_down();
  /// Adds the parameters' low-precision gradients into float32 accumulators
  /// and clears them. Call after each backward (accumulation-safe).
  void accumulate_grads();
  /// The parameters hold the float32 masters again, with the accumulated
  /// float32 gradients (undefined where none arrived); accumulators reset.
  void restore();
  bool is_down() const { return down_; }  ///< Whether the parameters currently hold the low-precision copies.

 private:
  std::vector<Tensor> params_;  ///< the handles the model and optimizer share
  std::vector<Tensor> masters_;  ///< float32 data, while down_
  std::vector<Tensor> grads_;  ///< float32 accumulators
  DType dtype_;
  bool down_ = false;
};

/// RAII: cast_down() for a scope (evaluation), restore() at its end.
class LowPrecisionScope {
 public:
  explicit LowPrecisionScope(MasterWeights* weights);  ///< null: does nothing
  ~LowPrecisionScope();
  LowPrecisionScope(const LowPrecisionScope&) = delete;
  LowPrecisionScope& operator=(const LowPrecisionScope&) = delete;

 private:
  MasterWeights* weights_;
};

}  // namespace anvil::nn::train
