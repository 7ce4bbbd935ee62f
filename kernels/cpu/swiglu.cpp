// SwiGLU on the CPU: out = silu(gate) * up and its gradient, one pass over
// dense operands (core makes them dense), math in float (double for
// float64), parallel over chunks of elements.
#include <cmath>
#include <type_traits>

#include "core/base/dtype.h"
#include "core/base/error.h"
#include "kernels/cpu/strided_loop.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/swiglu_kernels.h"

namespace anvil::cpu {
namespace {

// A few flops and three or five memory streams per element.
constexpr int64_t kSwigluCostPerElement = 8;

template <typename T> using math_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename F> void visit_floating(const char* op, DType dtype, F&& f) {
  ANVIL_CHECK(is_floating(dtype), op, ": expected a floating dtype, got ", dtype_name(dtype));
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) f(tag);
  });
}

}  // namespace

void swiglu(const View& out, const View& gate, const View& up) {
  visit_floating("swiglu", gate.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = math_t<T>;
    T* y = out.ptr<T>();
    const T* g = gate.ptr<T>();
    const T* u = up.ptr<T>();
    const int64_t n = out.numel();
    parallel_for(n, n * kSwigluCostPerElement, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const C x = static_cast<C>(g[i]);
        y[i] = static_cast<T>(x / (C(1) + std::exp(-x)) * static_cast<C>(u[i]));
      }
    });
  });
}

void swiglu_backward(const View& grad_gate, const View& grad_up, const View& grad_out, const View& gate,
                     const View& up) {
  visit_floating("swiglu_backward", gate.dtype, [&](auto tag) {
    using T = decltype(tag);
    using C = math_t<T>;
    T* gg = grad_gate.ptr<T>();
    T* gu = grad_up.ptr<T>();
    const T* go = grad_out.ptr<T>();
    const T* g = gate.ptr<T>();
    const T* u = up.ptr<T>();
    const int64_t n = gate.numel();
    parallel_for(n, n * kSwigluCostPerElement, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const C x = static_cast<C>(g[i]), dy = static_cast<C>(go[i]);
        const C s = C(1) / (C(1) + std::exp(-x));
        gg[i] = static_cast<T>(dy * static_cast<C>(u[i]) * (s * (C(1) + x * (C(1) - s))));
        gu[i] = static_cast<T>(dy * x * s);
      }
    });
  });
}

ANVIL_REGISTER_KERNEL(kernel::Swiglu, CPU, swiglu);
ANVIL_REGISTER_KERNEL(kernel::SwigluBackward, CPU, swiglu_backward);

}  // namespace anvil::cpu
