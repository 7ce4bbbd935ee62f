#include "distributed/process_group/subgroup.h"

#include <algorithm>

#include "core/base/error.h"
#include "distributed/process_group/init.h"

namespace anvil::distributed {

namespace {

std::string list_str(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

int position_of(const std::vector<int>& ranks, int rank) {
  auto it = std::find(ranks.begin(), ranks.end(), rank);
  return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

}  // namespace

SubGroup::SubGroup(std::vector<int> ranks, int world_rank, int id, std::shared_ptr<ProcessGroup> backend)
    : ProcessGroup(position_of(ranks, world_rank), static_cast<int>(ranks.size())),
      ranks_(std::move(ranks)),
      world_rank_(world_rank),
      id_(id),
      backend_(std::move(backend)) {
  ANVIL_CHECK((backend_ != nullptr) == (rank() >= 0), "SubGroup ", describe(), ": rank ", world_rank,
              (rank() >= 0 ? " is a member but has no backend group" : " is not a member but got a backend group"));
}

std::string SubGroup::describe() const { return "group " + std::to_string(id_) + " " + list_str(ranks_); }

int SubGroup::global_rank(int group_rank) const {
  ANVIL_CHECK(group_rank >= 0 && group_rank < size(), "SubGroup ", describe(), ": group rank ", group_rank,
              " is not in [0, ", size(), ")");
  return ranks_[static_cast<size_t>(group_rank)];
}

int SubGroup::group_rank(int global_rank) const { return position_of(ranks_, global_rank); }

ProcessGroup& SubGroup::backend() const { return member("backend"); }

std::string SubGroup::backend_name() const { return backend_ ? backend_->backend_name() : "none (not a member)"; }

ProcessGroup& SubGroup::member(const char* op) const {
  ANVIL_CHECK(backend_ != nullptr, op, " on ", describe(), ": rank ", world_rank_,
              " of the world is not a member of this group; only its members call its collectives "
              "(check is_member() first)");
  return *backend_;
}

WorkHandle SubGroup::all_reduce(Tensor& tensor, ReduceOp op) { return member("all_reduce").all_reduce(tensor, op); }
WorkHandle SubGroup::broadcast(Tensor& tensor, int root) { return member("broadcast").broadcast(tensor, root); }
WorkHandle SubGroup::all_gather(Tensor& output, const Tensor& input) {
  return member("all_gather").all_gather(output, input);
}
WorkHandle SubGroup::reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op) {
  return member("reduce_scatter").reduce_scatter(output, input, op);
}
WorkHandle SubGroup::send(const Tensor& tensor, int dst, int tag) { return member("send").send(tensor, dst, tag); }
WorkHandle SubGroup::recv(Tensor& tensor, int src, int tag) { return member("recv").recv(tensor, src, tag); }
WorkHandle SubGroup::barrier() { return member("barrier").barrier(); }
std::vector<WorkHandle> SubGroup::batch_isend_irecv(const std::vector<P2POp>& ops) {
  return member("batch_isend_irecv").batch_isend_irecv(ops);
}
WorkHandle SubGroup::all_to_all_single(Tensor& output, const Tensor& input,
                                       const std::vector<int64_t>& output_split_sizes,
                                       const std::vector<int64_t>& input_split_sizes) {
  return member("all_to_all").all_to_all_single(output, input, output_split_sizes, input_split_sizes);
}
WorkHandle SubGroup::all_to_all(std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) {
  return member("all_to_all").all_to_all(outputs, inputs);
}

World::World(std::shared_ptr<Store> store, int rank, int size, MakeProcessGroupOptions options)
    : store_(std::move(store)), rank_(rank), size_(size), options_(std::move(options)) {
  ANVIL_CHECK(store_ != nullptr, "World: no store");
  ANVIL_CHECK(size >= 1 && rank >= 0 && rank < size, "World: rank ", rank, " is not in [0, ", size, ")");
}

std::shared_ptr<SubGroup> World::new_group(std::vector<int> ranks, const NewGroupOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  const int id = next_id_;
  const std::string what = "new_group " + list_str(ranks) + " (group " + std::to_string(id) + ", rank " +
                           std::to_string(rank_) + " of a world of " + std::to_string(size_) + ")";
  if (ranks.empty())
    for (int r = 0; r < size_; ++r) ranks.push_back(r);
  for (int r : ranks) ANVIL_CHECK(r >= 0 && r < size_, what, ": rank ", r, " is not in the world [0, ", size_, ")");
  std::sort(ranks.begin(), ranks.end());
  auto dup = std::adjacent_find(ranks.begin(), ranks.end());
  ANVIL_CHECK(dup == ranks.end(), what, ": rank ", dup == ranks.end() ? 0 : *dup, " is listed twice");
  // Numbered only once the arguments are valid: a rejected call leaves the
  // numbering as it was (every rank rejects it alike).
  ++next_id_;

  const int group_rank = position_of(ranks, rank_);
  if (group_rank < 0) return std::make_shared<SubGroup>(std::move(ranks), rank_, id, nullptr);

  MakeProcessGroupOptions mo = options_;
  mo.store_prefix = options_.store_prefix + "group" + std::to_string(id) + "/";
  if (!options.backend.empty()) mo.backend = options.backend;
  if (options.timeout) mo.group.timeout = *options.timeout;
  // The lowest member publishes its list and the others compare, so ranks
  // that disagree fail here with both lists instead of meeting the wrong
  // peers (or waiting for ones that never come) in the rendezvous.
  const std::string key = mo.store_prefix + "ranks";
  const std::string mine = list_str(ranks);
  if (group_rank == 0) {
    store_->set(key, mine);
  } else {
    std::string first;
    try {
      first = store_->get_string(key);
    } catch (const Error& e) {
      fail(what, ": rank ", ranks[0], " (the lowest member) never made this group: ", e.what(),
           " (every rank of the world must call new_group, in the same order)");
    }
    ANVIL_CHECK(first == mine, what, ": this rank was called with ranks ", mine,
                " but the lowest member of the group was called with ", first,
                "; every rank of the world must call new_group with the same ranks, in the same order");
  }
  std::shared_ptr<ProcessGroup> backend = make_process_group(store_, group_rank, static_cast<int>(ranks.size()), mo);
  return std::make_shared<SubGroup>(std::move(ranks), rank_, id, std::move(backend));
}

std::shared_ptr<SubGroup> new_group(const std::vector<int>& ranks, const NewGroupOptions& options) {
  return default_world().new_group(ranks, options);
}

}  // namespace anvil::distributed
