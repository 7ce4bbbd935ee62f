#include "kernels/cusolver/cusolver_handles.h"

#include <vector>

namespace anvil::cuda {

cusolverDnHandle_t cusolver_handle(int device, cudaStream_t stream) {
  thread_local std::vector<cusolverDnHandle_t> handles;
  if (device >= static_cast<int>(handles.size())) handles.resize(static_cast<size_t>(device) + 1, nullptr);
  cusolverDnHandle_t& h = handles[static_cast<size_t>(device)];
  if (h == nullptr) ANVIL_CUSOLVER_CHECK(cusolverDnCreate(&h));
  ANVIL_CUSOLVER_CHECK(cusolverDnSetStream(h, stream));
  return h;
}

}  // namespace anvil::cuda
