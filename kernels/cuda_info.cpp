// The second file where ANVIL_CUDA appears: device queries that work in every
// build, answering "none" when anvil was built without CUDA.
#include "kernels/cuda_info.h"

#include "core/base/error.h"

#if ANVIL_CUDA
#include "kernels/cuda/runtime/runtime.h"
#endif

namespace anvil::cuda {

int device_count() {
#if ANVIL_CUDA
  return runtime::device_count();
#else
  return 0;
#endif
}

bool is_available() { return device_count() > 0; }

DeviceProperties device_properties(int index) {
  int n = device_count();
  ANVIL_CHECK(index >= 0 && index < n, "cuda::device_properties: device ", index, " does not exist (", n,
              " CUDA device(s) visible", n == 0 ? "; anvil was built without CUDA or no GPU is present" : "", ")");
#if ANVIL_CUDA
  return runtime::device_properties(index);
#else
  return {};
#endif
}

}  // namespace anvil::cuda
