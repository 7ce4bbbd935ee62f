// libFuzzer: what a job's processes are started with. The first byte picks
// the parser; the rest is split at NUL bytes into strings:
//   even: anvil-run's command line (distributed/launcher/arguments.h), the
//         strings as argv[1..];
//   odd:  the torchrun-style environment a rank reads (distributed/process_group/init.h's
//         launch_env_from, SLURM's and Open MPI's variables included:
//         distributed/process_group/cluster_env.h), the strings as NAME=VALUE.
// A refusal (UsageError, anvil::Error) is the right answer to bad input; an
// accepted input must give a configuration the launcher can run, which is
// checked here (a violation aborts, and libFuzzer reports it).
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "distributed/launcher/arguments.h"
#include "distributed/process_group/init.h"

namespace {

std::vector<std::string> split_at_nul(const uint8_t* data, size_t size) {
  std::vector<std::string> parts(1);
  for (size_t i = 0; i < size && parts.size() <= 64; ++i) {
    if (data[i] == 0)
      parts.emplace_back();
    else
      parts.back().push_back(static_cast<char>(data[i]));
  }
  return parts;
}

void require(bool ok) {
  if (!ok) std::abort();
}

void command_line(const std::vector<std::string>& args) {
  namespace launcher = anvil::distributed::launcher;
  try {
    const launcher::CommandLine line = launcher::parse_command_line(args);
    if (line.help) return;
    const launcher::LaunchConfig& c = line.config;
    require(!c.command.empty());
    require(c.nproc_per_node >= 1 && c.nnodes >= 1 && c.node_rank >= 0 && c.node_rank < c.nnodes);
    require(c.master_port >= 0 && c.master_port <= 65535);
    require(c.kill_grace_s >= 0 && c.kill_grace_s <= 3600);
    require(c.max_restarts >= 0);
    // A PS job keeps at least one worker.
    require(c.num_ps >= 0 &&
            (c.num_ps == 0 || static_cast<long long>(c.num_ps) < static_cast<long long>(c.nnodes) * c.nproc_per_node));
  } catch (const launcher::UsageError&) {
  }
}

void environment(const std::vector<std::string>& assignments) {
  std::map<std::string, std::string> vars;
  for (const std::string& a : assignments) {
    const size_t eq = a.find('=');
    if (eq != std::string::npos) vars[a.substr(0, eq)] = a.substr(eq + 1);
  }
  try {
    const anvil::distributed::LaunchEnv e =
        anvil::distributed::launch_env_from([&](const char* name) -> std::optional<std::string> {
          auto it = vars.find(name);
          if (it == vars.end()) return std::nullopt;
          return it->second;
        });
    require(e.world_size >= 1 && e.rank >= 0 && e.rank < e.world_size);
    require(e.local_world_size >= 1 && e.local_rank >= 0 && e.local_rank < e.local_world_size);
    require(e.master_port >= 1 && e.master_port <= 65535 && !e.master_addr.empty());
  } catch (const anvil::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<std::string> strings = split_at_nul(data + 1, size - 1);
  if (data[0] % 2 == 0)
    command_line(strings);
  else
    environment(strings);
  return 0;
}
