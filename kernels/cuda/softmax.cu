// STUB: to be written (see kernels/cuda/cuda_backend.h for who defines what).
#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

void CudaBackend::softmax(const View&, const View&, int64_t, bool) { fail("cuda backend: softmax is not implemented yet"); }
void CudaBackend::softmax_backward(const View&, const View&, const View&, int64_t, bool) { fail("cuda backend: softmax_backward is not implemented yet"); }

}  // namespace anvil::cuda
