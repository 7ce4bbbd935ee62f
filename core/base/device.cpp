#include "core/base/device.h"

#include "core/base/error.h"

namespace anvil {

Device::Device(const std::string& spec) {
  auto colon = spec.find(':');
  std::string kind = spec.substr(0, colon);
  if (kind == "cpu")
    type = DeviceType::CPU;
  else if (kind == "cuda" || kind == "gpu")
    type = DeviceType::CUDA;
  else
    fail("Device: unknown device '", spec, "', expected 'cpu', 'cuda' or 'cuda:N'");
  index = 0;
  if (colon != std::string::npos) {
    try {
      size_t used = 0;
      index = std::stoi(spec.substr(colon + 1), &used);
      ANVIL_CHECK(used == spec.size() - colon - 1 && index >= 0, "");
    } catch (...) {
      fail("Device: bad device index in '", spec, "', expected a non-negative integer after ':'");
    }
  }
}

std::string Device::str() const {
  if (type == DeviceType::CPU) return "cpu";
  return "cuda:" + std::to_string(index);
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace anvil
