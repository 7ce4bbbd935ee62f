#pragma once
/// @file
/// Joining a job: init_process_group reads what the launcher (anvil-run, or
/// torchrun-style environments) set, makes the store and the default process
/// group. After PyTorch's torch.distributed:
///
///     anvil::distributed::init_process_group();          // env:// rendezvous
///     Tensor g = ...;
///     anvil::distributed::all_reduce(g, ReduceOp::Avg);  // on the default group
///     anvil::distributed::destroy_process_group();
///
/// The default group is process-wide state (one job per process), like the
/// device registry: set by init_process_group, cleared by destroy.
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "distributed/process_group/process_group.h"
#include "distributed/store/store.h"

namespace anvil::distributed {

class World;

/// What a launcher tells each process (environment variables).
struct LaunchEnv {
  int rank = 0;  ///< RANK: 0 .. world_size-1
  int world_size = 1;  ///< WORLD_SIZE
  int local_rank = 0;  ///< LOCAL_RANK: index on this machine (picks the GPU)
  int local_world_size = 1;  ///< LOCAL_WORLD_SIZE: processes on this machine
  std::string master_addr;  ///< MASTER_ADDR: where rank 0 serves the store
  int master_port = 0;  ///< MASTER_PORT
  /// "torchrun" when only torchrun variables were read, else the scheduler
  /// ("SLURM", "Open MPI") that gave the values the torchrun variables did not.
  std::string source = "torchrun";
};
/// Reads and validates the variables; an anvil::Error names a missing or
/// invalid one. LOCAL_RANK / LOCAL_WORLD_SIZE default to RANK / WORLD_SIZE.
/// Under srun or mpirun, a value whose torchrun variable is unset comes from
/// SLURM's or Open MPI's variables (cluster_env.h has which and the order).
LaunchEnv launch_env_from_environment();
/// The same from any lookup (tests, the fuzzer): a variable the lookup does not
/// have is std::nullopt; an empty one counts as unset.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
/// The launch variables as `lookup` gives them; anvil::Error names a missing or invalid one.
LaunchEnv launch_env_from(const EnvLookup& lookup);

/// init_process_group's settings, as torch.distributed.init_process_group's arguments.
struct InitOptions {
  /// "auto" (Gloo for CPU tensors, NCCL for CUDA tensors), "gloo" or "nccl".
  std::string backend = "auto";
  /// "env://": TCPStore served by rank 0 at MASTER_ADDR:MASTER_PORT.
  /// "file:///path": FileStore at /path (one machine; use a fresh file per job).
  std::string init_method = "env://";
  /// Override the environment when set (e.g. tests that start ranks as threads).
  std::optional<int> rank;
  std::optional<int> world_size;  ///< unset: WORLD_SIZE from the environment
  /// A store to use instead of the one init_method describes.
  std::shared_ptr<Store> store;
  /// Timeout (store and every collective), consistency checks, Gloo address.
  ProcessGroupOptions group;
};

/// Makes the default group and returns it. Fails if one exists already.
std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& options = {});
/// Finishes the default group (waits for its queued work) and forgets it.
void destroy_process_group();
bool is_initialized();  ///< Whether init_process_group made the default group.
/// The default group; throws when init_process_group was not called.
ProcessGroup& default_group();
std::shared_ptr<ProcessGroup> default_group_ptr();  ///< The default group's shared pointer.
/// The default group's store (for agreeing on small things outside collectives).
std::shared_ptr<Store> default_store();
/// The default group's world: new_group and init_device_mesh make their
/// subgroups from it (subgroup.h).
World& default_world();

int get_rank();  ///< in the default group
int get_world_size();  ///< of the default group
int get_local_rank();  ///< from the environment, 0 when unset
int get_local_world_size();  ///< LOCAL_WORLD_SIZE from the environment, 1 when unset.

}  // namespace anvil::distributed
