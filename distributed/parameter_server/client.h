#pragma once
/// @file
/// ParameterServerClient: a worker's connections to every PS of the job. It
/// pulls the parameters into the worker's model and pushes the model's
/// gradients, each PS getting its own shard (shard_plan.h).
///
///     ps::ParameterServerClient client(model->parameters(), plan, {.worker_id = w, .servers = addrs});
///     for (...) {
///       client.pull();                  // model <- current parameters
///       loss = ...; loss.backward();
///       auto r = client.push();         // gradients -> the PS ranks
///       // async: r.refused > 0 means some PS found it too stale: pull and redo
///     }
///     client.finish();                  // BYE: this worker is done
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "distributed/parameter_server/shard_plan.h"

namespace anvil::distributed::ps {

/// Where one parameter server listens.
struct ServerAddress {
  std::string host;  ///< host name or address
  int port = 0;  ///< TCP port
};

/// A worker's connection settings.
struct ClientOptions {
  int worker_id = 0;  ///< 0..num_workers-1; a restarted worker reuses its id
  std::vector<ServerAddress> servers;  ///< index = PS index
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(60)};  ///< how long connecting (and retrying) may take
  /// Bounds every reply, the wait of a synchronous step for the slowest worker included.
  std::chrono::milliseconds reply_timeout{std::chrono::minutes(5)};
};

/// What a push returned from the servers.
struct PushResult {
  int applied = 0;  ///< PS ranks that applied the gradient
  int refused = 0;  ///< async: PS ranks that found it too stale (pull and compute again)
  int64_t max_staleness = 0;  ///< the largest staleness any PS reported
  int64_t max_applied_staleness = 0;  ///< the same over the PS ranks that applied it
};

/// A worker's side of a parameter-server job: pulls the parameters from every server and pushes gradients to them (see
/// the file comment).
class ParameterServerClient {
 public:
  /// Connects to every PS and says HELLO; anvil::Error names the PS and why
  /// (unreachable, refused: another worker holds the id, the model differs).
  ParameterServerClient(std::vector<Tensor> params, const ShardPlan& plan, ClientOptions options);
  ~ParameterServerClient();  ///< closes the connections (without BYE: as a crash would)
  ParameterServerClient(const ParameterServerClient&) = delete;
  ParameterServerClient& operator=(const ParameterServerClient&) = delete;

  /// Copies every PS's current shard into the parameters (cast to their dtype
  /// and device) and remembers each PS's version for the next push.
  void pull();
  /// Sends each parameter's .grad() (zeros where it has none) to its PS.
  /// Sync: returns when every PS has applied the step.
  PushResult push();
  /// Tells every PS this worker is done. The client is closed afterwards.
  void finish();
  /// Closes the sockets at once, as a worker that dies would (tests).
  void abort();

  /// The version each PS was at when last pulled.
  const std::vector<int64_t>& versions() const { return versions_; }
  /// Payload bytes moved by this client (both directions).
  uint64_t bytes_moved() const { return bytes_moved_; }

 private:
  std::vector<Tensor> params_;
  ShardPlan plan_;
  ClientOptions options_;
  std::vector<int> fds_;
  std::vector<int64_t> versions_;
  uint64_t bytes_moved_ = 0;
};

}  // namespace anvil::distributed::ps
