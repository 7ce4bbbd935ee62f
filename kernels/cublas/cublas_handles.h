#pragma once
// cuBLASLt handles and error checking for the CUDA matmul. Included only by
// kernels/cublas/*.cpp, so the cuBLAS headers stay out of widely included ones.
#include <cublasLt.h>

#include "core/base/error.h"

#define ANVIL_CUBLAS_CHECK(call) \
  do { \
    cublasStatus_t anvil_cublas_status_ = (call); \
    if (anvil_cublas_status_ != CUBLAS_STATUS_SUCCESS) { \
      ::anvil::fail(#call, " failed: ", cublasLtGetStatusName(anvil_cublas_status_), " (", \
                    cublasLtGetStatusString(anvil_cublas_status_), ") at ", __FILE__, ":", __LINE__); \
    } \
  } while (0)

namespace anvil::cuda {

// The cuBLASLt handle of the calling thread for `device` (which must be
// current), created on first use. cuBLASLt takes the stream per call, so one
// handle per (device, thread) never needs a stream switch; handles are kept
// for the life of the process (destroying them at exit can run after the
// CUDA context is gone).
cublasLtHandle_t cublaslt_handle(int device);

}  // namespace anvil::cuda
