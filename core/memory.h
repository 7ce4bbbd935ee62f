#pragma once
/// @file
/// Memory statistics and cache control of a device's allocator, as
/// torch.cuda.memory_stats() / empty_cache() / reset_peak_memory_stats().
#include "core/base/allocator.h"
#include "core/base/device.h"

namespace anvil {

MemoryStats memory_stats(Device device = Device::cpu());  ///< The allocator counters of `device`.
/// Restarts the peak counters of `device` from the current values.
void reset_peak_memory_stats(Device device = Device::cpu());
/// Gives cached, unused blocks back to the device (a no-op for allocators that do not cache).
void empty_cache(Device device = Device::cpu());
/// Caps the bytes the device's allocator holds (Allocator::set_memory_limit);
/// 0 removes the cap. On the CPU this is the only way to a catchable
/// out-of-memory error (find_max_batch_size searches there only under a cap).
void set_memory_limit(Device device, size_t bytes);
size_t memory_limit(Device device = Device::cpu());  ///< The cap set_memory_limit set on `device`; 0: none.

}  // namespace anvil
