#include "distributed/parameter_server/shard_plan.h"

#include <algorithm>
#include <numeric>

#include "core/base/error.h"

namespace anvil::distributed::ps {

int64_t ShardPlan::shard_numel(int ps_index) const {
  ANVIL_CHECK(ps_index >= 0 && ps_index < num_ps, "ShardPlan: PS index ", ps_index, " is not in 0..", num_ps - 1);
  int64_t n = 0;
  for (int p : owned[static_cast<size_t>(ps_index)]) n += numels[static_cast<size_t>(p)];
  return n;
}

uint64_t ShardPlan::fingerprint() const {
  // FNV-1a over (numel, owner) pairs and the PS count.
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ULL;
    }
  };
  mix(static_cast<uint64_t>(num_ps));
  for (size_t i = 0; i < numels.size(); ++i) {
    mix(static_cast<uint64_t>(numels[i]));
    mix(static_cast<uint64_t>(owner[i]));
  }
  return h;
}

ShardPlan make_shard_plan(const std::vector<int64_t>& numels, int num_ps, ShardPolicy policy) {
  ANVIL_CHECK(num_ps >= 1, "parameter server: the number of PS ranks must be at least 1, got ", num_ps);
  for (size_t i = 0; i < numels.size(); ++i)
    ANVIL_CHECK(numels[i] >= 0, "parameter server: parameter ", i, " has a negative size ", numels[i]);
  ShardPlan plan;
  plan.num_ps = num_ps;
  plan.numels = numels;
  plan.owner.assign(numels.size(), 0);
  plan.owned.assign(static_cast<size_t>(num_ps), {});
  if (policy == ShardPolicy::RoundRobin) {
    for (size_t i = 0; i < numels.size(); ++i) plan.owner[i] = static_cast<int>(i % static_cast<size_t>(num_ps));
  } else {
    std::vector<size_t> order(numels.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return numels[a] > numels[b]; });
    std::vector<int64_t> load(static_cast<size_t>(num_ps), 0);
    for (size_t i : order) {
      const auto lightest = std::min_element(load.begin(), load.end()) - load.begin();
      plan.owner[i] = static_cast<int>(lightest);
      load[static_cast<size_t>(lightest)] += numels[i];
    }
  }
  for (size_t i = 0; i < numels.size(); ++i)
    plan.owned[static_cast<size_t>(plan.owner[i])].push_back(static_cast<int>(i));
  return plan;
}

}  // namespace anvil::distributed::ps
