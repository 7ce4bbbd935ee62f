#pragma once
// Where a job's rank, world size, local rank and rendezvous address come from
// when no torchrun-style launcher set them: the variables SLURM (srun) and
// Open MPI (mpirun) give each process, read as torchrun and Lightning read
// them. init.h's launch_env_from uses this for every value whose torchrun
// variable (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT) is unset: an explicit torchrun variable always wins. Between
// the two schedulers Open MPI wins, since an mpirun inside a SLURM
// allocation inherits the batch step's SLURM_PROCID for every process.
//
//   SLURM     rank SLURM_PROCID, world SLURM_NTASKS, local rank SLURM_LOCALID,
//             local world: this node's entry (SLURM_NODEID) of
//             SLURM_TASKS_PER_NODE ("2(x3),1"), master: the first host of
//             SLURM_STEP_NODELIST (else SLURM_JOB_NODELIST), in its compressed
//             form ("node[01-04,07]"), port: 15000 + the last 4 digits of
//             SLURM_JOB_ID (Lightning's choice: every task computes the same).
//   Open MPI  OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE; master
//             127.0.0.1 when every rank is on this node, else MASTER_ADDR must
//             be given (mpirun -x MASTER_ADDR=host); MASTER_PORT must be given.
#include <optional>
#include <string>
#include <vector>

#include "distributed/process_group/init.h"

namespace anvil::distributed {

// A value and the variable it came from (errors name the variable).
struct EnvValue {
  std::string name;
  std::string text;
};

struct SchedulerEnv {
  std::string scheduler;  // "SLURM", "Open MPI", or empty when neither is present
  std::optional<EnvValue> rank, world_size, local_rank, local_world_size, master_addr, master_port;
};

// Reads the scheduler's variables (lookup: unset or empty = std::nullopt).
// anvil::Error for a malformed hostlist or tasks-per-node list, naming the
// variable and its value.
SchedulerEnv scheduler_env_from(const EnvLookup& lookup);

// SLURM's compressed hostlist: "node[01-04,07],login1,rack[1-2]-n[1-2]" ->
// node01 node02 node03 node04 node07 login1 rack1-n1 rack1-n2 rack2-n1 rack2-n2.
// Zero padding follows the range's lower bound. anvil::Error (with the list)
// on unbalanced or nested brackets, an empty name or range, a bound that is
// not a number, lo > hi, more than max_hosts names, or names adding up to
// more than 64 MiB.
std::vector<std::string> expand_hostlist(const std::string& list, size_t max_hosts = 1000000);

// SLURM_TASKS_PER_NODE: "2(x3),1" -> {2, 2, 2, 1}. anvil::Error when malformed.
std::vector<int> expand_tasks_per_node(const std::string& text);

}  // namespace anvil::distributed
