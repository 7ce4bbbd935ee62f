#pragma once
/// @file
/// Which parameter-server rank holds which parameter. A parameter is never
/// split: each lives whole on one PS, so the optimizer's per-parameter state
/// (AdamW's moments) sits next to it and a PS runs an ordinary optimizer over
/// its parameters. Size-balanced: parameters are placed largest first on the
/// least-loaded PS (ties: lower index), which keeps the byte counts within one
/// parameter of each other; round-robin is there for comparison and tests.
///
/// Every rank (PS and worker) computes the same plan from the same parameter
/// sizes, so the plan itself is never sent.
#include <cstdint>
#include <string>
#include <vector>

namespace anvil::distributed::ps {

/// How parameters are spread over the servers: balancing elements, or in turn.
enum class ShardPolicy { SizeBalanced, RoundRobin };

/// Which parameter server holds which parameters (the same plan on every rank).
struct ShardPlan {
  int num_ps = 1;  ///< parameter servers
  std::vector<int64_t> numels;  ///< per parameter, in the model's order
  std::vector<int> owner;  ///< per parameter: the PS that holds it
  std::vector<std::vector<int>> owned;  ///< per PS: its parameters, ascending
  /// Elements a PS holds (the length of its flat shard).
  int64_t shard_numel(int ps_index) const;
  /// A fingerprint of the layout (sizes and placement); a worker whose model
  /// differs from the server's is refused with both fingerprints.
  uint64_t fingerprint() const;
};

/// Throws anvil::Error for num_ps < 1 or a negative size. More PS than
/// parameters leaves some PS empty (they still answer, with 0 elements).
ShardPlan make_shard_plan(const std::vector<int64_t>& numels, int num_ps,
                          ShardPolicy policy = ShardPolicy::SizeBalanced);

}  // namespace anvil::distributed::ps
