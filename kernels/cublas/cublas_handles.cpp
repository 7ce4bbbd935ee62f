#include "kernels/cublas/cublas_handles.h"

#include <vector>

namespace anvil::cuda {

cublasLtHandle_t cublaslt_handle(int device) {
  thread_local std::vector<cublasLtHandle_t> handles;
  if (device >= static_cast<int>(handles.size())) handles.resize(static_cast<size_t>(device) + 1, nullptr);
  cublasLtHandle_t& h = handles[static_cast<size_t>(device)];
  if (h == nullptr) ANVIL_CUBLAS_CHECK(cublasLtCreate(&h));
  return h;
}

}  // namespace anvil::cuda
