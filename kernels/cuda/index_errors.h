#pragma once
// Index validation on the GPU without a host synchronisation per op.
//
// index_select, index_add, gather, scatter_add and cross_entropy (targets)
// check every index on the device. A bad one is skipped (nothing is read or
// written for that element) and the first one is recorded in a small pinned,
// device-mapped host record per GPU. The host turns it into an anvil::Error
// naming the op, the index, the dim and its size:
//   - at the start of the next of those ops on that GPU, if the faulty kernel
//     has finished by then (a read of host memory, no synchronisation), and
//   - whenever raise_pending_index_error(device) is called; the backend's
//     synchronize() and blocking copies to the host call it (memory.cpp), so
//     the error is certain to surface at the next synchronising point.
// Only the first error is kept until it is raised; raising clears it.
#include "kernels/cuda/device/index_error.cuh"

namespace anvil::cuda {

// The device pointer of `device`'s record (allocated on first use).
kit::IndexErrorRecord* index_error_record(int device);
// Throws anvil::Error if a finished kernel on `device` recorded a bad index.
void raise_pending_index_error(int device);

}  // namespace anvil::cuda
