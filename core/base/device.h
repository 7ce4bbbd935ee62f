#pragma once
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace anvil {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  Device() = default;
  Device(DeviceType t, int i = 0) : type(t), index(i) {}
  Device(const char* spec) : Device(std::string(spec)) {}  // NOLINT: "cpu", "cuda", "cuda:1"
  Device(const std::string& spec);  // NOLINT

  static Device cpu() { return {DeviceType::CPU, 0}; }
  static Device cuda(int i = 0) { return {DeviceType::CUDA, i}; }
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

std::ostream& operator<<(std::ostream& os, const Device& d);
///@{
/// Device types as libtorch names them: Device(kCUDA, 1), x.to(kCPU).
inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;
///@}

/// A stream is an opaque per-device queue handle. id 0 is the device's default
/// stream; a backend maps other ids to its own queue objects.
struct Stream {
  Device device;
  uint64_t id = 0;
  bool operator==(const Stream& o) const { return device == o.device && id == o.id; }
};

}  // namespace anvil
