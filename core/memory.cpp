#include "core/memory.h"

#include "core/base/error.h"
#include "kernels/runtime.h"

namespace anvil {

MemoryStats memory_stats(Device device) { return runtime_for(device).allocator(device.index).stats(); }
void reset_peak_memory_stats(Device device) { runtime_for(device).allocator(device.index).reset_peak_stats(); }
void empty_cache(Device device) { runtime_for(device).allocator(device.index).empty_cache(); }
void set_memory_limit(Device device, size_t bytes) {
  ANVIL_CHECK(runtime_for(device).allocator(device.index).set_memory_limit(bytes),
              "set_memory_limit: the allocator of ", device, " has no memory limit");
}
size_t memory_limit(Device device) { return runtime_for(device).allocator(device.index).memory_limit(); }

}  // namespace anvil
