#pragma once
// SwiGLU, the gated MLP of Llama-family models: out = silu(gate) * up, with
// silu(g) = g * sigmoid(g). Fused so the MLP's activation reads gate and up
// once and writes out once (composed, it is three passes and two
// temporaries). All operands dense, of one shape and one floating dtype; math
// in float (double for float64).
#include "kernels/view.h"

namespace anvil::kernel {

struct Swiglu {
  static constexpr const char* name = "swiglu";
  static constexpr bool has_fallback = true;  // core/ops/nn/swiglu.cpp: silu(gate) * up
  using Signature = void(const View& out, const View& gate, const View& up);
};

// grad_gate = grad_out * up * silu'(gate) and grad_up = grad_out * silu(gate),
// with silu'(g) = s (1 + g (1 - s)), s = sigmoid(g), in one pass.
struct SwigluBackward {
  static constexpr const char* name = "swiglu_backward";
  static constexpr bool has_fallback = true;
  using Signature = void(const View& grad_gate, const View& grad_up, const View& grad_out, const View& gate,
                         const View& up);
};

}  // namespace anvil::kernel
