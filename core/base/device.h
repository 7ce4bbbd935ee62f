#pragma once
/// @file
/// Where a tensor lives (Device: the CPU or CUDA device N) and a handle to one
/// of a device's queues (Stream).
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace anvil {

/// The kinds of device a tensor can live on.
enum class DeviceType : uint8_t { CPU, CUDA };

/// A device: its type and, for CUDA, its index. Converts from "cpu", "cuda", "cuda:1".
struct Device {
  DeviceType type = DeviceType::CPU;  ///< CPU or CUDA
  int index = 0;  ///< the GPU's ordinal (0 for the CPU)

  Device() = default;
  /// A device of type `t`, ordinal `i`.
  Device(DeviceType t, int i = 0) : type(t), index(i) {}
  /// Parses "cpu", "cuda" or "cuda:N" (implicit, so `x.to("cuda")` reads as in libtorch).
  Device(const char* spec) : Device(std::string(spec)) {}  // NOLINT: "cpu", "cuda", "cuda:1"
  /// Parses "cpu", "cuda" or "cuda:N"; throws anvil::Error on anything else.
  Device(const std::string& spec);  // NOLINT

  static Device cpu() { return {DeviceType::CPU, 0}; }  ///< The CPU.
  static Device cuda(int i = 0) { return {DeviceType::CUDA, i}; }  ///< CUDA device `i`.
  bool is_cpu() const { return type == DeviceType::CPU; }  ///< Whether this is the CPU.
  bool is_cuda() const { return type == DeviceType::CUDA; }  ///< Whether this is a CUDA device.
  std::string str() const;  ///< "cpu" or "cuda:N", as PyTorch prints a device.
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }  ///< Same type and index.
  bool operator!=(const Device& o) const { return !(*this == o); }  ///< Not the same type and index.
};

/// Prints str().
std::ostream& operator<<(std::ostream& os, const Device& d);
///@{
/// Device types as libtorch names them: Device(kCUDA, 1), x.to(kCPU).
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;
///@}

/// A stream is an opaque per-device queue handle. id 0 is the device's default
/// stream; a backend maps other ids to its own queue objects.
struct Stream {
  Device device;  ///< the device the stream belongs to
  uint64_t id = 0;  ///< 0: the device's default stream
  /// The same queue on the same device.
  bool operator==(const Stream& o) const { return device == o.device && id == o.id; }
};

}  // namespace anvil
