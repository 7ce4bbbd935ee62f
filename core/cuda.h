#pragma once
/// @file
/// anvil::cuda, as libtorch's torch::cuda: whether this process can use CUDA
/// devices, how many, what they are, and waiting for their work. Plain C++ in
/// every build: without CUDA (or without a GPU) no device is ever available.
///
///     Device device = anvil::cuda::is_available() ? Device::cuda(0) : Device::cpu();
///     ...
///     anvil::cuda::synchronize();  // before reading a timer
///
/// This is the header above kernels/ to include (nn, distributed, samples and
/// users; anvil/anvil.h brings it). The queries themselves are the kernels
/// layer's (kernels/cuda_info.h, which asks the CUDA runtime): this header
/// re-exports them rather than wrapping them, so DeviceProperties and the
/// three functions exist once.
///
/// No cuda::manual_seed / manual_seed_all: one Philox generator serves every
/// device, so anvil::manual_seed (core/random.h) seeds CPU and CUDA draws
/// alike, and a CUDA-only seed has nothing to set.
#include "kernels/cuda_info.h"  // IWYU pragma: export (DeviceProperties, is_available, device_count, device_properties)

namespace anvil::cuda {

/// Blocks until all work queued on CUDA device `device_index` has finished,
/// raising that work's errors (anvil::synchronize(Device::cuda(i)), core/stream.h).
/// -1, the default, waits for every visible device (anvil has no "current
/// device", so this is libtorch's synchronize() on one GPU and no weaker on
/// several); with no device visible it has nothing to wait for and returns.
/// Throws anvil::Error for an index no visible device has.
void synchronize(int device_index = -1);

}  // namespace anvil::cuda
