// STUB: to be written (see kernels/cuda/cuda_backend.h for who defines what).
#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

void CudaBackend::pool2d(PoolKind, const View&, const View&, const Pool2dParams&) { fail("cuda backend: pool2d is not implemented yet"); }
void CudaBackend::pool2d_backward(PoolKind, const View&, const View&, const View&, const View&, const Pool2dParams&) { fail("cuda backend: pool2d_backward is not implemented yet"); }

}  // namespace anvil::cuda
