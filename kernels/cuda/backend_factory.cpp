// Creates the CUDA Backend for the registry (kernels/registry.cpp).
//
// Status: the CUDA Backend implementation (kernels, cuBLASLt, cuDNN, caching
// allocator on cudaMalloc) is the next issue and does not exist yet, so no
// backend is returned even when a GPU is present; the registry then raises a
// clear error for cuda tensors. Device queries (kernels/cuda_info.h) work.
#include <memory>

#include "kernels/backend.h"

namespace anvil::cuda {

std::unique_ptr<Backend> make_cuda_backend() { return nullptr; }

}  // namespace anvil::cuda
