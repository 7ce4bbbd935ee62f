#pragma once
// What the cuSOLVER wrappers (lu.cpp, svd.cpp) share: a status check that
// names the call, one handle per (device, thread), and the 32-bit int guard.
// Real GPU only: the emulated build has no cuSOLVER.
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <cstdint>

#include "core/base/error.h"

#define ANVIL_CUSOLVER_CHECK(call) \
  do { \
    cusolverStatus_t anvil_cusolver_status_ = (call); \
    if (anvil_cusolver_status_ != CUSOLVER_STATUS_SUCCESS) \
      ::anvil::fail(#call, " failed with cusolverStatus_t ", static_cast<int>(anvil_cusolver_status_), " at ", \
                    __FILE__, ":", __LINE__); \
  } while (0)

namespace anvil::cuda {

// Made on first use and kept for the process's life, as the cuBLASLt handles
// (kernels/cublas/cublas_handles.cpp); bound to `stream` on every call.
cusolverDnHandle_t cusolver_handle(int device, cudaStream_t stream);

// cuSOLVER counts in int: a dim past that cannot be passed.
inline int solver_int(const char* op, int64_t v) {
  ANVIL_CHECK(v <= (int64_t{1} << 31) - 1, op, ": a dim of ", v, " exceeds cuSOLVER's 32-bit int");
  return static_cast<int>(v);
}

}  // namespace anvil::cuda
