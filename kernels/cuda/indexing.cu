// STUB: to be written (see kernels/cuda/cuda_backend.h for who defines what).
#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

void CudaBackend::index_select(const View&, const View&, int64_t, const View&) { fail("cuda backend: index_select is not implemented yet"); }
void CudaBackend::index_add(const View&, int64_t, const View&, const View&) { fail("cuda backend: index_add is not implemented yet"); }
void CudaBackend::gather(const View&, const View&, int64_t, const View&) { fail("cuda backend: gather is not implemented yet"); }
void CudaBackend::scatter_add(const View&, int64_t, const View&, const View&) { fail("cuda backend: scatter_add is not implemented yet"); }

}  // namespace anvil::cuda
