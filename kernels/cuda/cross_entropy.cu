// STUB: to be written (see kernels/cuda/cuda_backend.h for who defines what).
#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

void CudaBackend::cross_entropy(const View&, const View&, const View&, const View&, const CrossEntropyParams&) { fail("cuda backend: cross_entropy is not implemented yet"); }
void CudaBackend::cross_entropy_backward(const View&, const View&, const View&, const View&, const View&, const CrossEntropyParams&) { fail("cuda backend: cross_entropy_backward is not implemented yet"); }

}  // namespace anvil::cuda
