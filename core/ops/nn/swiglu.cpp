// swiglu: the checks, the kernel or its composed fallback, and the gradient.
// This file and one kernel file per backend (kernels/cpu/swiglu.cpp,
// kernels/cuda/swiglu.cu) are the whole op: the recipe for a fused op.
#include "core/ops/nn/swiglu.h"

#include "core/autograd/function.h"
#include "core/autograd/grad_mode.h"
#include "core/dispatch.h"
#include "core/factory.h"
#include "core/ops/elementwise.h"
#include "core/ops/nn/nn_common.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/swiglu_kernels.h"

namespace anvil {
namespace {

ANVIL_DECLARE_KERNEL_OP(kernel::Swiglu);
ANVIL_DECLARE_KERNEL_OP(kernel::SwigluBackward);

// The composed forms: what runs where no kernel is registered, and the
// backward under create_graph (so it is itself differentiable).
Tensor composed_forward(const Tensor& gate, const Tensor& up) { return silu(gate) * up; }

nn_detail::Grads composed_backward(const Tensor& g, const Tensor& gate, const Tensor& up) {
  const Tensor s = sigmoid(gate);
  const Tensor silu_gate = gate * s;
  return {g * up * (s * (gate * (1.0 - s) + 1.0)), g * silu_gate};
}

nn_detail::Grads fused_backward(const Tensor& g, const Tensor& gate, const Tensor& up) {
  auto* run = find_kernel<kernel::SwigluBackward>(gate.device().type);
  if (!run) return composed_backward(g, gate, up);
  Tensor grad_gate = empty(gate.shape(), gate.options()), grad_up = empty(up.shape(), up.options());
  if (gate.numel() > 0) {
    run(grad_gate.view_of(), grad_up.view_of(), g.to(gate.dtype()).contiguous().view_of(), gate.view_of(),
        up.view_of());
  }
  return {grad_gate, grad_up};
}

}  // namespace

Tensor swiglu(const Tensor& gate, const Tensor& up) {
  detail::check_defined("swiglu", gate, "gate");
  detail::check_defined("swiglu", up, "up");
  detail::check_floating("swiglu", gate, "gate");
  detail::check_same_device("swiglu", {gate, up});
  ANVIL_CHECK(gate.shape() == up.shape() && gate.dtype() == up.dtype(), "swiglu: expected gate and up of one shape ",
              "and dtype, got gate ", detail::describe(gate), " and up ", detail::describe(up));
  auto* run = find_kernel<kernel::Swiglu>(gate.device().type);
  if (!run) return composed_forward(gate, up);

  const Tensor g = gate.detach().contiguous(), u = up.detach().contiguous();
  Tensor out = empty(gate.shape(), gate.options());
  if (out.numel() > 0) run(out.view_of(), g.view_of(), u.view_of());
  if (autograd::needs_grad({gate, up})) {
    // The inputs themselves are saved (not the dense copies), so that under
    // create_graph the composed backward is recorded against their history.
    autograd::record(
        "swiglu", {gate, up}, out,
        [sg = autograd::SavedTensor(gate, "swiglu"), su = autograd::SavedTensor(up, "swiglu")](const Tensor& grad) {
          if (autograd::GradMode::is_enabled()) return composed_backward(grad, sg.get(), su.get());
          return fused_backward(grad, sg.get().detach().contiguous(), su.get().detach().contiguous());
        });
  }
  return out;
}

}  // namespace anvil
