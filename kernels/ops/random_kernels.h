#pragma once
// Random numbers (Philox; core/base/philox.h has the counter convention, so
// every backend draws the same numbers).
#include <cstdint>

#include "kernels/view.h"

namespace anvil {

enum class RandomKind : uint8_t { Uniform, Normal };  // Uniform in [a, b); Normal(mean a, std b)
struct RandomParams {
  RandomKind kind = RandomKind::Uniform;
  double a = 0, b = 1;
  uint64_t seed = 0, offset = 0;
};

namespace kernel {

struct Random {
  static constexpr const char* name = "random";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const RandomParams& p);
};

// out = in * keep / (1 - p) with keep = uniform >= p; mask (uint8) records keep.
struct Dropout {
  static constexpr const char* name = "dropout";
  static constexpr bool has_fallback = false;
  using Signature = void(const View& out, const View& mask, const View& in, double p, uint64_t seed, uint64_t offset);
};

}  // namespace kernel
}  // namespace anvil
