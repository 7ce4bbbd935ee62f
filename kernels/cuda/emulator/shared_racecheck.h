#pragma once
// Internal to the emulator: the shared-memory checks. __shared__ variables
// are thread_local (device_builtins.h), so "shared memory" is the stream
// worker's static TLS block; an instrumented access that falls inside it is
// checked here, per byte, between barriers:
//   racecheck  a write and another thread's read or write of the same byte
//              with no __syncthreads between them (atomics excepted);
//   initcheck  a read of a byte no thread of this block has written.
#include <cstddef>

namespace anvil::emulator {

void racecheck_launch_begin();
void racecheck_block_begin();
void racecheck_barrier();
void racecheck_launch_end();
// False when `p` is not shared memory of the running block.
bool check_shared_access(const void* p, size_t n, bool write, bool atomic, const void* pc);

}  // namespace anvil::emulator
