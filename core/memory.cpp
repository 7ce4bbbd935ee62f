#include "core/memory.h"

#include "kernels/backend.h"

namespace anvil {

MemoryStats memory_stats(Device device) { return backend_for(device).allocator(device.index).stats(); }
void reset_peak_memory_stats(Device device) { backend_for(device).allocator(device.index).reset_peak_stats(); }
void empty_cache(Device device) { backend_for(device).allocator(device.index).empty_cache(); }

}  // namespace anvil
