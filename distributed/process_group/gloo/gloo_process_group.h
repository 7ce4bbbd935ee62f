#pragma once
/// @file
/// GlooProcessGroup: collectives on CPU tensors over Gloo's TCP transport.
///
/// Collectives run one after another on a worker thread, in the order they
/// were called (every rank must call them in the same order, as with any
/// process group); each call returns a Work at once. Send/recv are posted to
/// Gloo immediately from the calling thread and complete in Work::wait().
/// Every Gloo operation carries the group's timeout; after a transport error
/// or timeout the group is broken and every later call fails at once with the
/// first error, since Gloo's connections are then in an unknown state.
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "distributed/process_group/process_group.h"
#include "distributed/store/store.h"

namespace gloo {
class Context;
}

namespace anvil::distributed {

/// The Gloo backend: collectives and point-to-point on CPU tensors, run in order on a worker thread (see the file
/// comment).
class GlooProcessGroup : public ProcessGroup {
 public:
  /// Rendezvous through `store` under keys starting with `store_prefix`
  /// (every rank passes the same prefix; each group needs its own).
  GlooProcessGroup(std::shared_ptr<Store> store, int rank, int size, const ProcessGroupOptions& options,
                   const std::string& store_prefix = "gloo/");
  ~GlooProcessGroup() override;

  std::string backend_name() const override { return "gloo"; }
  const ProcessGroupOptions& options() const { return options_; }  ///< The settings it was made with.

  WorkHandle all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::Sum) override;
  WorkHandle broadcast(Tensor& tensor, int root) override;
  WorkHandle all_gather(Tensor& output, const Tensor& input) override;
  WorkHandle reduce_scatter(Tensor& output, const Tensor& input, ReduceOp op = ReduceOp::Sum) override;
  WorkHandle send(const Tensor& tensor, int dst, int tag = 0) override;
  WorkHandle recv(Tensor& tensor, int src, int tag = 0) override;
  WorkHandle barrier() override;
  WorkHandle all_to_all_single(Tensor& output, const Tensor& input, const std::vector<int64_t>& output_split_sizes = {},
                               const std::vector<int64_t>& input_split_sizes = {}) override;

  /// Why the group stopped working ("" while it works).
  std::string broken_reason() const;

 private:
  class QueuedWork;
  class P2PWork;
  friend class P2PWork;
  struct Header;

  /// Queues `body` for the worker thread; `name` prefixes its errors.
  WorkHandle enqueue(const std::string& name, std::function<void(uint32_t tag)> body);
  void worker_loop();
  /// Runs on the worker: exchanges headers and throws when ranks disagree.
  void check_consistent(const std::string& name, const Header& mine, uint32_t tag);
  void check_all_to_all_counts(const AllToAllPlan& plan, uint32_t tag);
  void mark_broken(const std::string& reason);
  std::string prefix(const std::string& op) const;

  ProcessGroupOptions options_;
  std::shared_ptr<Store> store_;
  std::shared_ptr<gloo::Context> context_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::shared_ptr<QueuedWork>, std::function<void(uint32_t)>>> queue_;
  bool stopping_ = false;
  std::string broken_;
  uint32_t next_tag_ = 0;  ///< worker thread only
  /// Sends/receives abandoned after an error: Gloo may still write into their
  /// buffers, so they are never freed (see the destructor).
  std::vector<std::shared_ptr<void>> graveyard_;
  std::thread worker_;
};

}  // namespace anvil::distributed
