// The device registry. The CPU backend always exists; the CUDA backend is
// created on first use when anvil was built with CUDA and a GPU is present.
// This is one of the two files where ANVIL_CUDA appears.
#include <memory>
#include <mutex>

#include "core/base/error.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda_info.h"

#if ANVIL_CUDA
namespace anvil::cuda {
std::unique_ptr<Backend> make_cuda_backend();  // null when no GPU is usable
}
#endif

namespace anvil {
namespace {

struct Registry {
  std::once_flag cuda_once;
  std::unique_ptr<Backend> cpu = std::make_unique<cpu::CpuBackend>();
  std::unique_ptr<Backend> cuda;

  Backend* cuda_backend() {
    std::call_once(cuda_once, [this] {
#if ANVIL_CUDA
      cuda = anvil::cuda::make_cuda_backend();
#endif
    });
    return cuda.get();
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

Backend& backend_for(DeviceType type) {
  if (type == DeviceType::CPU) return *registry().cpu;
  Backend* b = registry().cuda_backend();
  ANVIL_CHECK(b != nullptr, "device cuda: no CUDA backend is available (",
#if ANVIL_CUDA
              "anvil was built with CUDA, but no usable GPU was found: no NVIDIA driver, no device, "
              "or CUDA_VISIBLE_DEVICES hides them all",
#else
              "anvil was built without CUDA",
#endif
              "); use device cpu or check anvil::cuda::is_available()");
  return *b;
}

bool has_backend(DeviceType type) { return type == DeviceType::CPU || registry().cuda_backend() != nullptr; }

}  // namespace anvil
