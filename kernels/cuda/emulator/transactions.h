#pragma once
// The cost model behind the emulated GPU's memory counters (profile.h): what
// one warp-wide memory instruction costs an H100, given each lane's address.
// Pure functions of the addresses, so tests can hold them against the rules
// NVIDIA documents (CUDA C++ Programming Guide, "Device Memory Accesses" and
// "Shared Memory" for compute capability 9.0).
#include <cstddef>
#include <cstdint>
#include <span>

namespace anvil::emulator {

struct LaneAccess {
  unsigned lane = 0;  // 0..31 within the warp
  uintptr_t address = 0;
  unsigned bytes = 0;  // 1, 2, 4, 8 or 16 (wider accesses count as several of 16)
};

// Global memory is moved in 32-byte sectors: a request costs the distinct
// sectors its lanes' bytes fall in. The ideal is the fewest sectors those
// bytes could fit in (distinct bytes / 32, rounded up): a warp reading 32
// consecutive aligned floats costs 4 of an ideal 4; shifted by one float, 5.
struct SectorCost {
  uint64_t sectors = 0, ideal_sectors = 0;
};
SectorCost global_request_cost(std::span<const LaneAccess> lanes);

// Shared memory has 32 banks of 4 bytes; word w lives in bank w % 32. Lanes
// reading the same word share it (broadcast); lanes reading different words
// of one bank are served in turn. A request of 4 bytes or less per lane is one
// phase of the whole warp; 8-byte accesses go in two phases (lanes 0-15,
// 16-31) and 16-byte accesses in four (lanes 0-7, 8-15, ...), each phase
// conflict-free when its lanes' words fall in distinct banks. The cost is
// the sum over phases of the most distinct words any one bank holds (the
// "wavefronts"); the ideal is one per phase that has lanes.
struct BankCost {
  uint64_t wavefronts = 0, ideal_wavefronts = 0;
};
BankCost shared_request_cost(std::span<const LaneAccess> lanes);

}  // namespace anvil::emulator
