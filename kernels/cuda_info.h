#pragma once
/// @file
/// What CUDA devices this process can use. Plain C++: callable from any layer
/// and in builds without CUDA (then no device is ever available).
#include <cstddef>
#include <string>

namespace anvil::cuda {

/// A GPU's name, compute capability, memory and multiprocessor count.
struct DeviceProperties {
  std::string name;  ///< the device name, as the driver reports it
  ///@{
  /// compute capability
  int major = 0, minor = 0;
  ///@}
  size_t total_memory = 0;  ///< bytes
  int multiprocessor_count = 0;  ///< number of streaming multiprocessors
};

bool is_available();  ///< built with CUDA and at least one GPU is visible
int device_count();  ///< GPUs visible to this process (0 in a build without CUDA).
DeviceProperties device_properties(int index = 0);  ///< throws anvil::Error for a bad index

}  // namespace anvil::cuda
