// STUB: to be written (see kernels/cuda/cuda_backend.h for who defines what).
#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

void CudaBackend::copy(const View&, const View&) { fail("cuda backend: copy is not implemented yet"); }
void CudaBackend::fill(const View&, const Scalar&) { fail("cuda backend: fill is not implemented yet"); }

}  // namespace anvil::cuda
