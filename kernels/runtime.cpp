// The device runtimes. The CPU's always exists; the CUDA one is created on
// first use when anvil was built with CUDA and a GPU is present.
// This is one of the two files where ANVIL_CUDA appears.
#include <memory>
#include <mutex>

#include "core/base/error.h"
#include "kernels/runtime.h"
#include "kernels/cpu/cpu_runtime.h"
#include "kernels/cuda_info.h"

#if ANVIL_CUDA
namespace anvil::cuda {
std::unique_ptr<Runtime> make_cuda_runtime();  // null when no GPU is usable
}
#endif

namespace anvil {
namespace {

struct Runtimes {
  std::once_flag cuda_once;
  std::unique_ptr<Runtime> cpu = std::make_unique<cpu::CpuRuntime>();
  std::unique_ptr<Runtime> cuda;

  Runtime* cuda_runtime() {
    std::call_once(cuda_once, [this] {
#if ANVIL_CUDA
      cuda = anvil::cuda::make_cuda_runtime();
#endif
    });
    return cuda.get();
  }
};

Runtimes& runtimes() {
  static Runtimes r;
  return r;
}

}  // namespace

Runtime& runtime_for(DeviceType type) {
  if (type == DeviceType::CPU) return *runtimes().cpu;
  Runtime* b = runtimes().cuda_runtime();
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

bool has_runtime(DeviceType type) { return type == DeviceType::CPU || runtimes().cuda_runtime() != nullptr; }

}  // namespace anvil
