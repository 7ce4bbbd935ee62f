// anvil::cuda::synchronize (core/cuda.h); the device queries are
// kernels/cuda_info.cpp's.
#include "core/cuda.h"

#include "core/base/error.h"
#include "core/stream.h"

namespace anvil::cuda {

void synchronize(int device_index) {
  const int n = device_count();
  if (device_index == -1) {
    for (int i = 0; i < n; ++i) anvil::synchronize(Device::cuda(i));
    return;
  }
  ANVIL_CHECK(device_index >= 0 && device_index < n, "cuda::synchronize: device ", device_index, " does not exist (", n,
              " CUDA device(s) visible", n == 0 ? "; anvil was built without CUDA or no GPU is present" : "", ")");
  anvil::synchronize(Device::cuda(device_index));
}

}  // namespace anvil::cuda
