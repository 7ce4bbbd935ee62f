// STUB: to be written (see kernels/cuda/cuda_backend.h for who defines what).
#include "kernels/cuda/cuda_backend.h"

namespace anvil::cuda {

void CudaBackend::reduce(ReduceOp, const View&, const View&, const ReduceParams&) { fail("cuda backend: reduce is not implemented yet"); }

}  // namespace anvil::cuda
