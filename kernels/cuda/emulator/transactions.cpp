// The emulated GPU's cost model (see transactions.h).
#include "kernels/cuda/emulator/transactions.h"

#include <algorithm>
#include <vector>

namespace anvil::emulator {

SectorCost global_request_cost(std::span<const LaneAccess> lanes) {
  // Byte ranges, merged: their union is what the request asks for.
  std::vector<std::pair<uintptr_t, uintptr_t>> ranges;
  ranges.reserve(lanes.size());
  for (const LaneAccess& a : lanes) ranges.emplace_back(a.address, a.address + a.bytes);
  std::sort(ranges.begin(), ranges.end());
  SectorCost cost;
  uint64_t bytes = 0;
  uintptr_t last_sector = UINTPTR_MAX;
  for (size_t i = 0; i < ranges.size();) {
    uintptr_t lo = ranges[i].first, hi = ranges[i].second;
    for (++i; i < ranges.size() && ranges[i].first <= hi; ++i) hi = std::max(hi, ranges[i].second);
    bytes += hi - lo;
    // Sectors of [lo, hi), not counting one already counted for the previous range.
    uintptr_t first = lo / 32;
    const uintptr_t last = (hi - 1) / 32;
    if (first == last_sector) ++first;
    if (first <= last) cost.sectors += last - first + 1;
    last_sector = last;
  }
  cost.ideal_sectors = (bytes + 31) / 32;
  return cost;
}

BankCost shared_request_cost(std::span<const LaneAccess> lanes) {
  // An access of n bytes covers the 4-byte words it touches; accesses wider
  // than 4 bytes split the warp into 32 * 4 / width lanes per phase.
  unsigned width = 4;
  for (const LaneAccess& a : lanes) width = std::max(width, std::min(a.bytes, 16u));
  const unsigned lanes_per_phase = 32 * 4 / width;  // 32, 16 or 8
  BankCost cost;
  for (unsigned phase = 0; phase < 32 / lanes_per_phase; ++phase) {
    std::vector<uintptr_t> words;
    for (const LaneAccess& a : lanes) {
      if (a.lane / lanes_per_phase != phase) continue;
      for (uintptr_t w = a.address / 4; w <= (a.address + a.bytes - 1) / 4; ++w) words.push_back(w);
    }
    if (words.empty()) continue;
    std::sort(words.begin(), words.end());
    words.erase(std::unique(words.begin(), words.end()), words.end());
    unsigned per_bank[32] = {};
    unsigned worst = 0;
    for (uintptr_t w : words) worst = std::max(worst, ++per_bank[w % 32]);
    cost.wavefronts += worst;
    ++cost.ideal_wavefronts;
  }
  return cost;
}

}  // namespace anvil::emulator
