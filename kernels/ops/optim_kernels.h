#pragma once
// Optimizer updates over lists of same-length tensors (multi-tensor: one
// launch or one parallel loop for all of a model's parameters).
#include <cstdint>
#include <span>

#include "kernels/view.h"

namespace anvil {

struct AdamWParams {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.0;
  int64_t step = 1;  // 1-based, after increment
  bool decoupled = true;  // AdamW (true) or Adam's L2-in-gradient (false)
};
struct SGDParams {
  double lr = 1e-2, momentum = 0.0, dampening = 0.0, weight_decay = 0.0;
  bool nesterov = false;
  bool first_step = false;  // momentum buffer is initialised to the gradient
};

namespace kernel {

struct AdamW {
  static constexpr const char* name = "adamw";
  static constexpr bool has_fallback = false;
  using Signature = void(std::span<const View> params, std::span<const View> grads, std::span<const View> exp_avg,
                         std::span<const View> exp_avg_sq, const AdamWParams& p);
};

struct SGD {
  static constexpr const char* name = "sgd";
  static constexpr bool has_fallback = false;
  using Signature = void(std::span<const View> params, std::span<const View> grads, std::span<const View> momentum,
                         const SGDParams& p);
};

}  // namespace kernel
}  // namespace anvil
