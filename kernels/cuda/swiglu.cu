// SwiGLU on CUDA: out = silu(gate) * up and its gradient, elementwise over
// dense operands (core makes them dense), math in float (double for
// float64). A grid-stride loop, one element per thread per step, so every
// warp request touches 32 consecutive elements of each operand (fully
// coalesced: the memory-bound kernels' test holds it to that).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/launch/check.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/cuda/device/kernel_kit.cuh"
#include "kernels/cuda/launch/dtype_dispatch.h"
#include "kernels/cuda/launch/grid.h"
#include "kernels/cuda/launch/launch.cuh"
#include "kernels/cuda/launch/nvtx.h"
#include "kernels/kernel_registry.h"
#include "kernels/ops/swiglu_kernels.h"

namespace anvil::cuda {
namespace {

using kit::acc_t;

constexpr int kSwigluThreads = 256;

template <typename T> __global__ void swiglu_kernel(T* out, const T* gate, const T* up, int64_t n) {
  using C = acc_t<T>;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const C g = dev::cast<C>(gate[i]);
    out[i] = dev::cast<T>(g / (C(1) + exp(-g)) * dev::cast<C>(up[i]));
  }
}

template <typename T>
__global__ void swiglu_backward_kernel(T* grad_gate, T* grad_up, const T* grad_out, const T* gate, const T* up,
                                       int64_t n) {
  using C = acc_t<T>;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const C g = dev::cast<C>(gate[i]), dy = dev::cast<C>(grad_out[i]);
    const C s = C(1) / (C(1) + exp(-g));
    grad_gate[i] = dev::cast<T>(dy * dev::cast<C>(up[i]) * (s * (C(1) + g * (C(1) - s))));
    grad_up[i] = dev::cast<T>(dy * g * s);
  }
}

}  // namespace

void swiglu(const View& out, const View& gate, const View& up) {
  ANVIL_NVTX_RANGE("swiglu");
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceGuard guard(gate.device_index);
  const cudaStream_t s = stream(gate.device_index);
  visit_floating_device_dtype("swiglu", gate.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(swiglu_kernel<T>, capped_blocks(n, kSwigluThreads), kSwigluThreads, 0, s)(out.ptr<T>(), gate.ptr<T>(),
                                                                                            up.ptr<T>(), n);
    ANVIL_CUDA_CHECK_LAUNCH("swiglu_kernel");
  });
}

void swiglu_backward(const View& grad_gate, const View& grad_up, const View& grad_out, const View& gate,
                     const View& up) {
  ANVIL_NVTX_RANGE("swiglu_backward");
  const int64_t n = gate.numel();
  if (n == 0) return;
  DeviceGuard guard(gate.device_index);
  const cudaStream_t s = stream(gate.device_index);
  visit_floating_device_dtype("swiglu_backward", gate.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(swiglu_backward_kernel<T>, capped_blocks(n, kSwigluThreads), kSwigluThreads, 0, s)(
        grad_gate.ptr<T>(), grad_up.ptr<T>(), grad_out.ptr<T>(), gate.ptr<T>(), up.ptr<T>(), n);
    ANVIL_CUDA_CHECK_LAUNCH("swiglu_backward_kernel");
  });
}

ANVIL_REGISTER_KERNEL(kernel::Swiglu, CUDA, swiglu);
ANVIL_REGISTER_KERNEL(kernel::SwigluBackward, CUDA, swiglu_backward);

}  // namespace anvil::cuda
