#pragma once
// The one way anvil launches a CUDA kernel:
//
//   launch_kernel(my_kernel<T>, grid, block, shared_bytes, stream)(args...);
//   ANVIL_CUDA_CHECK_LAUNCH("family.op");
//
// With nvcc this is exactly `my_kernel<T><<<grid, block, shared_bytes,
// stream>>>(args...)`. In the emulated-GPU build (ANVIL_CUDA_EMULATOR, see
// kernels/cuda/emulator/README.md) the same line queues the grid on the
// emulator's stream worker, which runs one fiber per CUDA thread. Keeping
// every launch behind this helper is what lets both builds share the kernel
// sources unchanged; tests/kernels/check_launches.cmake fails on a stray
// triple-chevron launch.
//
// The arguments are converted to the kernel's own parameter types (so `{}`
// and implicit conversions work as they do with <<<>>>), and copied at the
// launch, as CUDA copies kernel parameters.
#if defined(ANVIL_CUDA_EMULATOR)
#include "kernels/cuda/emulator/launch.h"
#endif

#include <cstddef>

namespace anvil::cuda {

template <typename... Params> struct KernelLaunch {
  void (*kernel)(Params...);
  dim3 grid;
  dim3 block;
  size_t shared_bytes;
  cudaStream_t stream;

  void operator()(Params... args) const {
#if defined(ANVIL_CUDA_EMULATOR)
    ::anvil::emulator::launch(kernel, grid, block, shared_bytes, stream, args...);
#else
    kernel<<<grid, block, shared_bytes, stream>>>(args...);
#endif
  }
};

template <typename... Params>
KernelLaunch<Params...> launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes = 0,
                                      cudaStream_t stream = nullptr) {
  return KernelLaunch<Params...>{kernel, grid, block, shared_bytes, stream};
}

}  // namespace anvil::cuda
