#pragma once
// Memory statistics and cache control of a device's allocator, as
// torch.cuda.memory_stats() / empty_cache() / reset_peak_memory_stats().
#include "core/base/allocator.h"
#include "core/base/device.h"

namespace anvil {

MemoryStats memory_stats(Device device = Device::cpu());
void reset_peak_memory_stats(Device device = Device::cpu());
// Gives cached, unused blocks back to the device (a no-op for allocators that do not cache).
void empty_cache(Device device = Device::cpu());

}  // namespace anvil
