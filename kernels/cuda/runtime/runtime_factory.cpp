// Creates the CUDA Runtime for the registry (kernels/runtime.cpp, the only
// file that asks whether anvil was built with CUDA). Null when no GPU is
// visible (no driver, no device, CUDA_VISIBLE_DEVICES empty): the registry
// then raises a clear error for cuda tensors and the CPU keeps working.
#include <memory>

#include "kernels/runtime.h"
#include "kernels/cuda/runtime/cuda_runtime.h"
#include "kernels/cuda/runtime/runtime.h"

namespace anvil::cuda {

std::unique_ptr<Runtime> make_cuda_runtime() {
  if (runtime::device_count() == 0) return nullptr;
  return std::make_unique<CudaRuntime>();
}

}  // namespace anvil::cuda
