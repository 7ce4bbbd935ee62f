#pragma once
// Internal to the emulator: the hooks that feed the memory counters
// (profile.h). The scheduler calls the launch, block, barrier and warp hooks;
// the access hooks call profile_access for every load, store and atomic of a
// block being profiled. Nothing is recorded unless profiling is on when the
// launch starts, and a block's accesses are costed when the block ends.
#include <cstddef>

namespace anvil::emulator {

struct Launch;
struct BlockRecorder;

// Non-null on a worker thread while it runs a block that is being profiled:
// the access hooks test this before anything else.
extern __thread BlockRecorder* t_block_recorder;

void profile_launch_begin(const Launch& launch);
void profile_launch_end(const Launch& launch);
void profile_block_begin(const Launch& launch, unsigned threads);
void profile_block_end();
void profile_barrier(unsigned warps);
void profile_warp_op();
void profile_access(const void* p, size_t n, bool write, bool atomic, const void* pc);

// The calling worker thread's TLS block, where the kernels' __shared__
// variables and dynamic shared memory live (shared_racecheck.cpp).
bool in_shared_memory(const void* p);

}  // namespace anvil::emulator
