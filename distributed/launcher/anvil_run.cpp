// anvil-run: starts a distributed job on this machine (the command line is
// in arguments.h, what it does in launcher.h).
//
// Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
// MASTER_ADDR and MASTER_PORT; with --ps N also its parameter-server role
// (ANVIL_PS_ROLE, ANVIL_PS_INDEX / ANVIL_WORKER_INDEX, ANVIL_NUM_PS,
// ANVIL_NUM_WORKERS).
//
// Port: on one node without --master-port, a free port is picked (so
// concurrent jobs, e.g. tests, never collide); with --nnodes > 1 the port
// must be given (every node must agree), as must --master-addr.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "distributed/launcher/arguments.h"
#include "distributed/launcher/launcher.h"

int main(int argc, char** argv) {
  namespace launcher = anvil::distributed::launcher;
  launcher::CommandLine line;
  try {
    line = launcher::parse_command_line(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const launcher::UsageError& e) {
    std::fprintf(stderr, "anvil-run: %s\n%s", e.what(), launcher::kUsage);
    return 2;
  }
  if (line.help) {
    std::fputs(launcher::kUsage, stdout);
    return 0;
  }
  try {
    return launcher::run(line.config);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
