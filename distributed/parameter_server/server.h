#pragma once
/// @file
/// ParameterServer: one PS rank's part of a parameter-server job (after
/// TensorFlow's ParameterServerStrategy). It holds its shard of the model's
/// parameters (shard_plan.h) and an optimizer over them, serves workers over
/// TCP (wire.h) from a thread per connection, and applies their gradients.
///
/// Synchronous mode: version v's update waits until every live worker pushed
/// a gradient computed at v, averages them and steps the optimizer once, so N
/// workers on N equal shards of a batch give the parameters one process gets
/// on the whole batch (as DDP does). A worker that dies leaves the step to
/// the others. Asynchronous mode: each push is applied when it arrives; its
/// staleness is the number of updates applied since the worker pulled, and a
/// push staler than max_staleness is refused (STALE): the worker pulls and
/// computes again, so no applied gradient is ever staler than the bound.
///
/// Workers are slots 0..num_workers-1. A worker that vanishes (connection
/// closed, silent past idle_timeout, a frame cut short or malformed) frees
/// its slot; a worker restarted with the same id takes it again and carries
/// on from the current parameters. The job is done when every slot said BYE,
/// or was vacant for rejoin_grace.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "distributed/parameter_server/shard_plan.h"
#include "distributed/parameter_server/wire.h"
#include "nn/optim/optimizer.h"

namespace anvil::distributed::ps {

/// Sync: one update per round of every worker's gradient; Async: one per push, within max_staleness.
enum class Mode { Sync, Async };

/// Makes the optimizer over this server's shard.
using OptimizerFactory = std::function<std::unique_ptr<nn::optim::Optimizer>(std::vector<Tensor> params)>;

/// A ParameterServer's settings.
struct ServerOptions {
  Mode mode = Mode::Sync;  ///< Sync or Async
  int num_workers = 1;  ///< workers in the job
  int max_staleness = 0;  ///< async: refuse pushes staler than this
  OptimizerFactory make_optimizer;  ///< required: e.g. SGD or AdamW over the shard
  int port = 0;  ///< 0: any free port (see port())
  /// A started frame must be complete within this; a worker silent this long
  /// between frames is dropped (its slot can be taken again).
  std::chrono::milliseconds message_timeout{std::chrono::seconds(30)};
  /// how long a live worker may stay silent before it counts as lost
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(5)};
  /// how long a lost worker's slot waits for it to come back
  std::chrono::milliseconds rejoin_grace{std::chrono::seconds(30)};
};

/// What a ParameterServer has done so far.
struct ServerStats {
  int64_t version = 0;  ///< updates applied
  int64_t pushes_applied = 0;  ///< gradients that went into an update
  int64_t stale_refused = 0;  ///< async pushes refused as too stale
  int64_t max_applied_staleness = 0;  ///< the largest staleness of an applied push
  std::vector<int64_t> staleness_histogram;  ///< [s]: pushes applied with staleness s
  int workers_lost = 0;  ///< connections dropped before BYE
  int rejoins = 0;  ///< a worker id connecting again after its slot was freed
  ///@{
  /// payloads, all workers
  uint64_t bytes_received = 0, bytes_sent = 0;
  ///@}
};

/// One parameter server of a job: holds its shard of the parameters and applies the workers' gradients with its own
/// optimizer (see the file comment).
class ParameterServer {
 public:
  /// `all_params`: the whole model's parameters in plan order (every rank
  /// builds the same model); this PS keeps copies of those it owns as their
  /// starting values. Starts listening at once. Throws anvil::Error.
  ParameterServer(const std::vector<Tensor>& all_params, const ShardPlan& plan, int ps_index, ServerOptions options);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  int port() const { return port_; }  ///< The port it listens on.
  /// Blocks until the job is done (see above); anvil::Error past `timeout`.
  void wait_until_done(std::chrono::milliseconds timeout);
  /// Closes every connection and joins the threads (the destructor does it).
  void stop();
  ServerStats stats() const;  ///< Its counters, at this moment.
  /// Copies of this PS's parameters (the plan's owned order).
  std::vector<Tensor> parameters() const;

 private:
  enum class Slot { Empty, Live, Finished, Vacant };
  void accept_loop();
  void serve(int fd);
  /// Handlers; each returns false to close the connection (after a reply).
  bool on_pull(int fd);
  bool on_push(int fd, int worker, const Frame& f);
  void release_slot(int worker, const std::string& why);  ///< under mu_
  bool done_locked() const;
  void apply_locked(const float* grad, float scale);
  void maybe_finish_sync_step_locked();
  void log(const std::string& line) const;

  const ShardPlan plan_;
  const int ps_index_;
  const ServerOptions options_;
  const int64_t shard_numel_;
  std::vector<Tensor> params_;  ///< owned, leaves requiring grad
  std::unique_ptr<nn::optim::Optimizer> optimizer_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  int64_t version_ = 0;
  std::vector<Slot> slots_;
  std::vector<Clock::time_point> vacant_since_;
  std::vector<bool> ever_joined_;
  /// Sync mode: the gradients pushed at version_ so far.
  std::vector<float> pending_sum_;
  std::vector<bool> pushed_;
  int pending_count_ = 0;
  ServerStats stats_;
  std::set<int> open_fds_;
  bool stopping_ = false;  ///< under mu_; the acceptor polls it too

  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> handlers_;
};

}  // namespace anvil::distributed::ps
