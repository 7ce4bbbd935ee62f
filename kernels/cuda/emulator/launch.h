#pragma once
// The emulator's side of launch_kernel (kernels/cuda/launch/launch.cuh): the kernel
// and a copy of its arguments become a task on the stream's worker, which
// runs the grid one fiber per CUDA thread (scheduler.cpp).
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <tuple>
#include <type_traits>

namespace anvil::emulator {

// What one CUDA thread runs: the kernel applied to its own copy of the
// launch's arguments (kernel parameters are by value, as on the GPU).
class KernelBody {
 public:
  virtual ~KernelBody() = default;
  virtual void run_one_thread() = 0;
};

// Validates the configuration as a real H100 would (an invalid one sets the
// calling thread's last error, like <<<>>>), then queues the grid on `stream`.
void submit_kernel(const void* kernel, dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                   std::unique_ptr<KernelBody> body);

template <typename... Params>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
            Params... args) {
  struct Body final : KernelBody {
    Body(void (*k)(Params...), Params... a) : kernel(k), arguments(a...) {}
    void run_one_thread() override { std::apply(kernel, arguments); }  // copies into by-value parameters
    void (*kernel)(Params...);
    std::tuple<std::decay_t<Params>...> arguments;
  };
  submit_kernel(reinterpret_cast<const void*>(kernel), grid, block, shared_bytes, stream,
                std::make_unique<Body>(kernel, args...));
}

}  // namespace anvil::emulator
