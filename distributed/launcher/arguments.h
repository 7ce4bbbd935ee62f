#pragma once
// anvil-run's command line, parsed into a LaunchConfig (launcher.h). A pure
// function of the arguments so the launcher's parsing is tested and fuzzed
// without starting anything (fuzz/fuzz_launcher.cpp).
//
//   anvil-run --nproc-per-node N [--nnodes M --node-rank R]
//             [--master-addr A] [--master-port P] [--kill-grace S] [--no-prefix] [--keep-going]
//             [--max-restarts N] [--ps N]
//             [--] program args...
//
// Options stop at the first argument that is not one of ours (or after
// "--"): everything from there is the program and its own arguments. Both
// "--opt value" and "--opt=value" work, and torchrun's underscores
// (--nproc_per_node) as well as dashes.
#include <stdexcept>
#include <string>
#include <vector>

#include "distributed/launcher/launcher.h"

namespace anvil::distributed::launcher {

// A command line anvil-run cannot run; what() says why (the caller prints
// the usage after it and exits with status 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CommandLine {
  bool help = false;  // -h / --help: print the usage, start nothing
  LaunchConfig config;
};

// `args` without the program name (argv[1..]). Throws UsageError.
CommandLine parse_command_line(const std::vector<std::string>& args);

extern const char* const kUsage;

}  // namespace anvil::distributed::launcher
