#pragma once
// Philox4x32-10 counter-based random numbers (Salmon et al., SC'11). The value
// at position i depends only on (seed, counter), so every backend produces the
// same numbers for the same seed and offset, in any thread order.
//
// Convention shared by all backends: element i of a random op with generator
// offset `off` uses counter (off + i / 4) and takes lane i % 4 of the result.
#include <cmath>
#include <cstdint>

#include "core/base/host_device.h"

namespace anvil::philox {

struct Uint4 {
  uint32_t x, y, z, w;
};

ANVIL_HD uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

ANVIL_HD Uint4 philox4x32(uint64_t seed, uint64_t counter) {
  Uint4 c{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u};
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    uint32_t lo0 = mulhilo(0xD2511F53u, c.x, &hi0);
    uint32_t lo1 = mulhilo(0xCD9E8D57u, c.z, &hi1);
    c = Uint4{hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

ANVIL_HD uint32_t lane(const Uint4& r, int i) { return i == 0 ? r.x : i == 1 ? r.y : i == 2 ? r.z : r.w; }

// Uniform in [0, 1) with 24 random bits, exactly representable in float.
ANVIL_HD float to_uniform(uint32_t bits) { return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f); }

ANVIL_HD float uniform_at(uint64_t seed, uint64_t offset, uint64_t i) {
  return to_uniform(lane(philox4x32(seed, offset + i / 4), static_cast<int>(i % 4)));
}

// Whether dropout with probability p keeps element i: its uniform draw is at
// least p (the CPU and CUDA dropout kernels and the fused attention kernels
// all decide this way, so they drop the same elements for the same state).
ANVIL_HD bool keep_at(uint64_t seed, uint64_t offset, uint64_t i, double p) {
  return static_cast<double>(uniform_at(seed, offset, i)) >= p;
}

// Standard normal by Box-Muller over lane pairs (0,1) and (2,3).
ANVIL_HD float normal_at(uint64_t seed, uint64_t offset, uint64_t i) {
  Uint4 r = philox4x32(seed, offset + i / 4);
  int l = static_cast<int>(i % 4);
  int pair = l & ~1;
  float u1 = to_uniform(lane(r, pair)) + (0.5f / 16777216.0f);  // in (0, 1): log is finite
  float u2 = to_uniform(lane(r, pair + 1));
  float radius = sqrtf(-2.0f * logf(u1));
  float angle = 6.28318530717958647f * u2;
  return (l & 1) ? radius * sinf(angle) : radius * cosf(angle);
}

// How far a generator's offset advances after drawing n values.
ANVIL_HD uint64_t counters_for(uint64_t n) { return (n + 3) / 4; }

}  // namespace anvil::philox
