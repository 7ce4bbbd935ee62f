#pragma once
/// @file
/// The global Philox generator's seed and offset: seeding, saving and restoring the random stream.
#include <cstdint>

namespace anvil {

/// The global Philox generator: a seed and an offset. Each random op reserves
/// counters_for(n) offsets, so the same seed replays the same stream on every
/// device. Thread-safe.
struct GeneratorState {
  uint64_t seed = 0;  ///< the seed manual_seed set
  uint64_t offset = 0;  ///< counters already used from that seed
};

void manual_seed(uint64_t seed);  ///< Seeds the global generator and restarts its stream, as torch.manual_seed.
GeneratorState generator_state();  ///< The generator's seed and offset, to save and restore.
void set_generator_state(const GeneratorState& s);  ///< Restores a state from generator_state().
/// Reserves room for n values and returns (seed, offset) to draw them with.
GeneratorState reserve_random(uint64_t n);

}  // namespace anvil
