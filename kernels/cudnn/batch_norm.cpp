// STUB: to be written (see kernels/cuda/cuda_backend.h for who defines what).
#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

void CudaBackend::batch_norm(const View&, const View&, const View&, const View&, const View*, const View*, const View*, const View*, const BatchNormParams&) { fail("cuda backend: batch_norm is not implemented yet"); }
void CudaBackend::batch_norm_backward(const View&, const View*, const View*, const View&, const View&, const View*, const View&, const View&, const BatchNormParams&) { fail("cuda backend: batch_norm_backward is not implemented yet"); }

}  // namespace anvil::cuda
