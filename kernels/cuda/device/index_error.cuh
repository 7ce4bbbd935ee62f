#pragma once
// Out-of-range indices found on the device. A kernel that meets one skips the
// element and records the first bad value here (pinned host memory mapped
// into the device's address space); the host raises an anvil::Error from it
// at the next check (kernels/cuda/index_errors.h). The function is
// device-only; the record's layout is shared with the host.
#include <cstdint>

namespace anvil::cuda::kit {

struct IndexErrorRecord {
  int state;  // 0 none, 1 being written, 2 complete
  int op;  // IndexOpCode of the kernel that found it
  long long value, size;
  int dim;
};

enum IndexOpCode : int { kIndexSelect = 1, kIndexAdd, kGather, kScatterAdd, kCrossEntropy, kScatter };

// Device code: nvcc, or the emulated GPU's host compiler (device_builtins.h).
#if defined(__CUDACC__) || defined(ANVIL_EMULATED_DEVICE_CODE)  // the record is also seen by host code
__device__ __forceinline__ void record_index_error(IndexErrorRecord* rec, int op, int64_t value, int64_t size,
                                                   int dim) {
  if (atomicCAS(&rec->state, 0, 1) == 0) {
    rec->op = op;
    rec->value = value;
    rec->size = size;
    rec->dim = dim;
    __threadfence_system();
    atomicExch(&rec->state, 2);
  }
}
#endif

}  // namespace anvil::cuda::kit
