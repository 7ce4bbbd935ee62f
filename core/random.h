#pragma once
#include <cstdint>

namespace anvil {

/// The global Philox generator: a seed and an offset. Each random op reserves
/// counters_for(n) offsets, so the same seed replays the same stream on every
/// device. Thread-safe.
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

void manual_seed(uint64_t seed);
GeneratorState generator_state();
void set_generator_state(const GeneratorState& s);
/// Reserves room for n values and returns (seed, offset) to draw them with.
GeneratorState reserve_random(uint64_t n);

}  // namespace anvil
