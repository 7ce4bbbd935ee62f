#pragma once
/// @file
/// What CUDA devices this process can use. Plain C++: callable from any layer
/// and in builds without CUDA (then no device is ever available).
#include <cstddef>
#include <string>

namespace anvil::cuda {

struct DeviceProperties {
  std::string name;
  int major = 0, minor = 0;  ///< compute capability
  size_t total_memory = 0;  ///< bytes
  int multiprocessor_count = 0;
};

bool is_available();  ///< built with CUDA and at least one GPU is visible
int device_count();
DeviceProperties device_properties(int index = 0);  ///< throws anvil::Error for a bad index

}  // namespace anvil::cuda
