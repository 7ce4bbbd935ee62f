#pragma once
// Thin, checked wrappers over the CUDA runtime used by the CUDA backend.
// Host-side C++; includes no CUDA header so it can be included anywhere in
// kernels/.
#include "kernels/cuda_info.h"

namespace anvil::cuda::runtime {

int device_count();  // 0 when the driver is missing or no GPU is visible
DeviceProperties device_properties(int index);

}  // namespace anvil::cuda::runtime
