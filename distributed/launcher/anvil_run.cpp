// anvil-run: starts a distributed job on this machine.
//
//   anvil-run --nproc-per-node N [--nnodes M --node-rank R]
//             [--master-addr A] [--master-port P] [--kill-grace S] [--no-prefix] [--keep-going]
//             [--max-restarts N]
//             [--] program args...
//
// Options stop at the first argument that is not one of ours (or after
// "--"): everything from there is the program and its own arguments.
// Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
// MASTER_ADDR and MASTER_PORT.
//
// Port: on one node without --master-port, a free port is picked (so
// concurrent jobs, e.g. tests, never collide); with --nnodes > 1 the port
// must be given (every node must agree), as must --master-addr.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "distributed/launcher/launcher.h"

namespace {

const char* kUsage =
    "usage: anvil-run --nproc-per-node N [--nnodes M --node-rank R] [--master-addr A] [--master-port P]\n"
    "                 [--kill-grace SECONDS] [--no-prefix] [--keep-going] [--max-restarts N]\n"
    "                 [--] program [args...]\n"
    "  --kill-grace S  seconds between SIGTERM and SIGKILL when stopping ranks (default 5)\n"
    "  --no-prefix     relay output without the \"[rank N] \" prefix\n"
    "  --keep-going    when a rank fails, let the others run on (exit status: the first failure's)\n"
    "  --max-restarts N  when a rank fails, restart every rank up to N times (default 0); ranks see\n"
    "                  TORCHELASTIC_RESTART_COUNT\n";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "anvil-run: %s\n%s", msg.c_str(), kUsage);
  std::exit(2);
}

int parse_int(const std::string& opt, const std::string& v) {
  try {
    size_t used = 0;
    int x = std::stoi(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  usage_error(opt + " expects an integer, got '" + v + "'");
}

}  // namespace

int main(int argc, char** argv) {
  anvil::distributed::launcher::LaunchConfig cfg;
  bool addr_given = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (a.rfind("--", 0) != 0) break;  // the program
    std::string name = a, value;
    bool has_value = false;
    if (auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      has_value = true;
    }
    for (auto& ch : name)
      if (ch == '_') ch = '-';  // accept torchrun's spelling too
    auto take = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) usage_error(name + " needs a value");
      return argv[++i];
    };
    if (name == "--nproc-per-node") cfg.nproc_per_node = parse_int(name, take());
    else if (name == "--nnodes") cfg.nnodes = parse_int(name, take());
    else if (name == "--node-rank") cfg.node_rank = parse_int(name, take());
    else if (name == "--master-addr") {
      cfg.master_addr = take();
      addr_given = true;
    } else if (name == "--master-port") cfg.master_port = parse_int(name, take());
    else if (name == "--kill-grace") {
      std::string v = take();
      try {
        cfg.kill_grace_s = std::stod(v);
      } catch (const std::exception&) {
        usage_error("--kill-grace expects seconds, got '" + v + "'");
      }
    } else if (name == "--no-prefix") cfg.prefix_output = false;
    else if (name == "--keep-going") cfg.keep_going = true;
    else if (name == "--max-restarts") cfg.max_restarts = parse_int(name, take());
    else usage_error("unknown option " + a);
  }
  for (; i < argc; ++i) cfg.command.emplace_back(argv[i]);
  if (cfg.command.empty()) usage_error("no program given");
  if (cfg.nproc_per_node < 1) usage_error("--nproc-per-node must be at least 1");
  if (cfg.max_restarts < 0) usage_error("--max-restarts must be at least 0");
  if (cfg.nnodes > 1 && (!addr_given || cfg.master_port == 0))
    usage_error("with --nnodes > 1, give --master-addr and --master-port (the same on every node)");
  if (cfg.master_port < 0 || cfg.master_port > 65535) usage_error("--master-port must be in 1..65535");
  try {
    return anvil::distributed::launcher::run(cfg);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
