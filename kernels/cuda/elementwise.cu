// STUB: to be written (see kernels/cuda/cuda_backend.h for who defines what).
#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

void CudaBackend::unary(UnaryOp, const View&, const View&, const UnaryParams&) { fail("cuda backend: unary is not implemented yet"); }
void CudaBackend::binary(BinaryOp, const View&, const View&, const View&) { fail("cuda backend: binary is not implemented yet"); }
void CudaBackend::where(const View&, const View&, const View&, const View&) { fail("cuda backend: where is not implemented yet"); }

}  // namespace anvil::cuda
