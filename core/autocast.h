#pragma once
/// @file
/// Autocast: mixed precision per op, as torch.autocast. Inside an
/// AutocastGuard the ops that gain from low precision (matmul, mm, bmm, dot,
/// linear, conv1d/conv2d, conv_transpose2d, scaled_dot_product_attention) cast
/// their float32 inputs to the guard's dtype and compute in it, and the ops
/// that need range or precision (softmax, log_softmax, the norms, the losses,
/// sum, prod, cumsum, logsumexp, vector and matrix norms) cast float16/bfloat16
/// inputs up to float32, following PyTorch's autocast op lists. Other ops run
/// in whatever dtype their inputs have (mixed inputs of the elementwise ops
/// promote to the wider one, as PyTorch's "promote" list).
///
///     {
///       AutocastGuard autocast(kBFloat16);
///       Tensor logits = model->forward(x);          // the linears in bfloat16
///       Tensor loss = cross_entropy(logits, y);     // float32
///     }
///     loss.backward();                              // each op's backward in its forward dtype
///
/// Parameters stay float32: the casts are recorded ops, so the gradients
/// reach the float32 leaves as float32. Backward passes run with autocast off
/// (each node differentiates in the dtypes its forward used); activation
/// checkpointing replays the forward under the autocast state it first ran in.
/// With float16, scale the loss (nn::train::GradScaler). The state is per
/// thread. Float64 tensors are never cast, as in PyTorch.
///
/// Where it hooks: each op front-end of the two lists calls
/// autocast::lower_precision / autocast::full_precision on its floating
/// inputs before validating them (core/ops/linalg.cpp, core/ops/nn/*.cpp,
/// core/ops/reduce*.cpp, core/ops/scan.cpp): the op's one entry point, which
/// every backend and every composed op goes through.
#include <array>
#include <optional>
#include <utility>

#include "core/base/dtype.h"
#include "core/tensor.h"

namespace anvil {

/// Autocast on (or off, with enabled = false) for the scope of the guard, as torch.autocast; restores the previous
/// state on exit.
class AutocastGuard {
 public:
  /// dtype: kBFloat16 or kFloat16. enabled = false turns autocast off for the
  /// scope (e.g. a region that must run in float32).
  explicit AutocastGuard(DType dtype = kBFloat16, bool enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool previous_enabled_;
  DType previous_dtype_;
};

namespace autocast {

bool is_enabled();  ///< Whether autocast is on in this thread.
DType dtype();  ///< the low-precision dtype of the innermost guard

/// Autocast's per-thread state: on or off, and the low-precision dtype.
struct State {
  bool enabled = false;  ///< autocast on
  DType dtype = kBFloat16;  ///< the dtype the low-precision ops compute in
};
State state();  ///< This thread's state.
void set_state(State s);  ///< Replaces this thread's state (what guards save and restore).

/// Autocast off for a scope, restored after: an op's body once its inputs are
/// cast, so the ops it is composed of run as written.
class Suspended {
 public:
  Suspended() : saved_(state()) { set_state({false, saved_.dtype}); }
  ~Suspended() { set_state(saved_); }
  Suspended(const Suspended&) = delete;
  Suspended& operator=(const Suspended&) = delete;

 private:
  State saved_;
};

/// For the low-precision ops: a float32 (or other half-type) tensor as the
/// autocast dtype when autocast is on; anything else unchanged.
Tensor lower_precision(const Tensor& t);
/// For the float32 ops: a float16/bfloat16 tensor as float32 when autocast is on.
Tensor full_precision(const Tensor& t);

/// An op front-end's autocast step in one line:
///
///     if (auto cast = autocast::full_precision_inputs(x)) return sum(cast[0], dims, keepdim);
///
/// When autocast is on, holds the inputs cast (full_precision or
/// lower_precision) and keeps autocast suspended while it lives, so the op's
/// call of itself runs once, on the cast inputs, as written; when off it is
/// false and touches nothing (no copies on the ordinary path).
template <size_t N> class CastInputs {
 public:
  CastInputs() = default;  ///< autocast off
  /// The inputs, each passed through `cast`, with autocast suspended while this lives.
  template <typename... Ts>
  CastInputs(Tensor (*cast)(const Tensor&), const Ts&... inputs)
      : active_(true), inputs_{cast(inputs)...}, off_(std::in_place) {}
  explicit operator bool() const { return active_; }  ///< Whether autocast was on (the inputs were cast).
  const Tensor& operator[](size_t i) const { return inputs_[i]; }  ///< The i-th cast input.

 private:
  bool active_ = false;
  std::array<Tensor, N> inputs_;
  std::optional<Suspended> off_;
};

/// The inputs cast to float32 when autocast is on (for the float32 ops); false when it is off.
template <typename... Ts> CastInputs<sizeof...(Ts)> full_precision_inputs(const Ts&... inputs) {
  if (!is_enabled()) return {};
  return {&full_precision, inputs...};
}

/// The inputs cast to the autocast dtype when autocast is on (for the low-precision ops); false when it is off.
template <typename... Ts> CastInputs<sizeof...(Ts)> lower_precision_inputs(const Ts&... inputs) {
  if (!is_enabled()) return {};
  return {&lower_precision, inputs...};
}

}  // namespace autocast
}  // namespace anvil
