#pragma once
/// @file
/// Process subgroups, after torch.distributed.new_group: a group of some of
/// the job's ranks with a communicator of its own, so collectives among them
/// run without the others (tensor-parallel peers, a data-parallel replica set,
/// a pipeline's neighbours).
///
///     World& world = default_world();            // made by init_process_group
///     auto evens = new_group({0, 2});            // every rank of the world calls it
///     if (evens->is_member()) all_reduce(t, ReduceOp::Sum, {.group = evens.get()});
///
/// As in PyTorch, every rank of the world calls every new_group, in the same
/// order and with the same ranks, also the ranks that are not in it: the
/// calls are numbered, and the number names the group's keys in the store.
/// The ranks are sorted; a member's rank in the group is its position in that
/// list. A non-member gets a handle whose rank() is -1 and whose collectives
/// throw. Each group has its own backend group (a Gloo context for CPU
/// tensors, an NCCL communicator from a fresh unique id for CUDA tensors),
/// made only on the members, whose rendezvous binds them together: creating
/// one waits (up to the timeout) for every member.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "distributed/process_group/process_group.h"
#include "distributed/process_group/process_group_factory.h"
#include "distributed/store/store.h"

namespace anvil::distributed {

/// World::new_group's settings, as torch.distributed.new_group's.
struct NewGroupOptions {
  /// "" keeps the world's backend; else "auto", "gloo" or "nccl".
  std::string backend;
  /// Unset keeps the world's timeout.
  std::optional<std::chrono::milliseconds> timeout;
};

/// A group of some ranks of a World. Its collectives take group ranks (root,
/// src, dst, the order of all_gather's blocks): global_rank() and
/// group_rank() translate.
class SubGroup : public ProcessGroup {
 public:
  /// `backend` is null exactly when this rank is not in `ranks` (sorted).
  SubGroup(std::vector<int> ranks, int world_rank, int id, std::shared_ptr<ProcessGroup> backend);

  /// Whether this rank belongs to the group (on non-members every collective is an error).
  bool is_member() const { return backend_ != nullptr; }
  /// The members' ranks in the world, in group-rank order.
  const std::vector<int>& ranks() const { return ranks_; }
  int global_rank(int group_rank) const;  ///< The world rank of group rank `group_rank`.
  /// -1 when `global_rank` is not a member.
  int group_rank(int global_rank) const;
  /// The communicator (throws on a non-member).
  ProcessGroup& backend() const;
  /// Numbered in the order new_group was called (the same on every rank).
  int id() const { return id_; }
  /// "group 3 [0, 2]": for error messages.
  std::string describe() const;

  std::string backend_name() const override;
  WorkHandle all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum) override;
  WorkHandle broadcast(Tensor& tensor, int root) override;
  WorkHandle all_gather(Tensor& output, const Tensor& input) override;
  WorkHandle reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum) override;
  WorkHandle send(const Tensor& tensor, int dst, int tag = 0) override;
  WorkHandle recv(Tensor& tensor, int src, int tag = 0) override;
  WorkHandle barrier() override;
  std::vector<WorkHandle> batch_isend_irecv(const std::vector<P2POp>& ops) override;
  WorkHandle all_to_all_single(Tensor& output, const Tensor& input, const std::vector<int64_t>& output_split_sizes = {},
                               const std::vector<int64_t>& input_split_sizes = {}) override;
  WorkHandle all_to_all(std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs) override;

 private:
  ProcessGroup& member(const char* op) const;

  std::vector<int> ranks_;
  int world_rank_;
  int id_;
  std::shared_ptr<ProcessGroup> backend_;
};

/// The ranks of one job and what making groups of them takes: the store,
/// this rank, and the backend options new groups inherit. init_process_group
/// makes the default one; tests that run ranks as threads make their own.
/// new_group is called from one thread per rank (its numbering is the
/// ranks' agreement).
class World {
 public:
  /// The job's ranks, their store and the subgroups made over them (see the comment above).
  World(std::shared_ptr<Store> store, int rank, int size, MakeProcessGroupOptions options = {});

  int rank() const { return rank_; }  ///< This process's world rank.
  int size() const { return size_; }  ///< Number of ranks in the world.
  const std::shared_ptr<Store>& store() const { return store_; }  ///< The store the ranks meet through.

  /// Collective over the world (see the top of this file). Empty `ranks`
  /// means every rank. Errors: a rank outside [0, size()), a rank listed
  /// twice, or members that were called with different ranks (each member
  /// compares its list with the lowest member's, through the store).
  std::shared_ptr<SubGroup> new_group(std::vector<int> ranks, const NewGroupOptions& options = {});

 private:
  std::shared_ptr<Store> store_;
  int rank_, size_;
  MakeProcessGroupOptions options_;
  std::mutex mu_;
  int next_id_ = 0;
};

/// new_group on the default world (init_process_group's).
std::shared_ptr<SubGroup> new_group(const std::vector<int>& ranks = {}, const NewGroupOptions& options = {});

}  // namespace anvil::distributed
