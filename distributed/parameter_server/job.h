#pragma once
/// @file
/// A process's place in a parameter-server job started by `anvil-run --ps N`
/// (distributed/README.md): ranks 0..N-1 are PS ranks, the rest workers. The
/// launcher sets, besides the torchrun variables:
///
///     ANVIL_PS_ROLE       "ps" or "worker"
///     ANVIL_PS_INDEX      this PS's index, 0..N-1 (PS ranks)
///     ANVIL_WORKER_INDEX  this worker's index, 0..M-1 (workers; its id on the PS)
///     ANVIL_NUM_PS, ANVIL_NUM_WORKERS
///
/// Each PS publishes its address in the job's store (rank 0, a PS, serves
/// it at MASTER_ADDR:MASTER_PORT); workers read the addresses from there.
#include <string>
#include <vector>

#include "distributed/parameter_server/client.h"
#include "distributed/process_group/init.h"
#include "distributed/store/store.h"

namespace anvil::distributed::ps {

/// This process's part in a parameter-server job, from the environment.
struct JobRole {
  bool is_ps = false;  ///< a parameter server (else a worker)
  int index = 0;  ///< PS index or worker index
  int num_ps = 1;  ///< parameter servers in the job
  int num_workers = 1;  ///< workers in the job
};

/// anvil::Error names a missing or invalid variable.
JobRole job_role_from_environment();
/// The role as `lookup` gives the variables; anvil::Error names a missing or invalid one.
JobRole job_role_from(const EnvLookup& lookup);

/// The address workers should use for this PS: ANVIL_PS_HOST when set, else
/// MASTER_ADDR when it is a loopback address (one machine), else the hostname.
std::string advertised_host(const EnvLookup& lookup);

/// Publishes PS `ps_index`'s address in the job's store.
void publish_server(Store& store, int ps_index, const ServerAddress& address);
/// Waits (the store's timeout) for every PS to have published.
std::vector<ServerAddress> lookup_servers(Store& store, int num_ps);

}  // namespace anvil::distributed::ps
