#include "distributed/launcher/arguments.h"

#include <cmath>
#include <cstddef>
#include <exception>

namespace anvil::distributed::launcher {

const char* const kUsage =
    "usage: anvil-run --nproc-per-node N [--nnodes M --node-rank R] [--master-addr A] [--master-port P]\n"
    "                 [--kill-grace SECONDS] [--no-prefix] [--keep-going] [--max-restarts N] [--ps N]\n"
    "                 [--] program [args...]\n"
    "  --kill-grace S  seconds between SIGTERM and SIGKILL when stopping ranks (default 5)\n"
    "  --no-prefix     relay output without the \"[rank N] \" prefix\n"
    "  --keep-going    when a rank fails, let the others run on (exit status: the first failure's)\n"
    "  --max-restarts N  when a rank fails, restart every rank up to N times (default 0); ranks see\n"
    "                  TORCHELASTIC_RESTART_COUNT\n"
    "  --ps N          parameter-server job: ranks 0..N-1 are PS ranks, the others workers (ANVIL_PS_ROLE,\n"
    "                  ANVIL_PS_INDEX / ANVIL_WORKER_INDEX, ANVIL_NUM_PS, ANVIL_NUM_WORKERS); a failed worker\n"
    "                  does not stop the job, and --max-restarts restarts that worker alone\n";

namespace {

int parse_int(const std::string& option, const std::string& text) {
  try {
    size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {  // not a number, or out of int's range
  }
  throw UsageError(option + " expects an integer, got '" + text + "'");
}

double parse_seconds(const std::string& option, const std::string& text) {
  double v = -1;
  try {
    size_t used = 0;
    v = std::stod(text, &used);
    if (used != text.size()) v = -1;
  } catch (const std::exception&) {
  }
  // An hour bounds it: a larger grace is a typo, and inf/NaN would make the
  // launcher's stop deadline overflow.
  if (!(v >= 0 && v <= 3600)) throw UsageError(option + " expects seconds from 0 to 3600, got '" + text + "'");
  return v;
}

void validate(const LaunchConfig& c, bool addr_given) {
  if (c.command.empty()) throw UsageError("no program given");
  if (c.nproc_per_node < 1) throw UsageError("--nproc-per-node must be at least 1");
  if (c.nnodes < 1) throw UsageError("--nnodes must be at least 1");
  if (c.node_rank < 0 || c.node_rank >= c.nnodes)
    throw UsageError("--node-rank must be in 0.." + std::to_string(c.nnodes - 1) + " for --nnodes " +
                     std::to_string(c.nnodes) + ", got " + std::to_string(c.node_rank));
  // Ranks are numbered node_rank * nproc_per_node + local rank in an int.
  if (static_cast<long long>(c.nnodes) * c.nproc_per_node > 1'000'000)
    throw UsageError("--nnodes times --nproc-per-node must be at most 1000000");
  if (c.max_restarts < 0) throw UsageError("--max-restarts must be at least 0");
  const long long world = static_cast<long long>(c.nnodes) * c.nproc_per_node;
  if (c.num_ps < 0 || (c.num_ps > 0 && c.num_ps >= world))
    throw UsageError("--ps must be from 1 to the number of ranks - 1 (" + std::to_string(world - 1) +
                     ": at least one worker), got " + std::to_string(c.num_ps));
  if (c.nnodes > 1 && (!addr_given || c.master_port == 0))
    throw UsageError("with --nnodes > 1, give --master-addr and --master-port (the same on every node)");
  if (c.master_port < 0 || c.master_port > 65535) throw UsageError("--master-port must be in 1..65535");
  if (addr_given && c.master_addr.empty()) throw UsageError("--master-addr must not be empty");
}

}  // namespace

CommandLine parse_command_line(const std::vector<std::string>& args) {
  CommandLine line;
  LaunchConfig& cfg = line.config;
  bool addr_given = false;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      line.help = true;
      return line;
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
      if (i + 1 >= args.size()) throw UsageError(name + " needs a value");
      return args[++i];
    };
    auto no_value = [&] {
      if (has_value) throw UsageError(name + " takes no value, got '" + a + "'");
    };
    if (name == "--nproc-per-node")
      cfg.nproc_per_node = parse_int(name, take());
    else if (name == "--nnodes")
      cfg.nnodes = parse_int(name, take());
    else if (name == "--node-rank")
      cfg.node_rank = parse_int(name, take());
    else if (name == "--master-addr") {
      cfg.master_addr = take();
      addr_given = true;
    } else if (name == "--master-port")
      cfg.master_port = parse_int(name, take());
    else if (name == "--kill-grace")
      cfg.kill_grace_s = parse_seconds(name, take());
    else if (name == "--no-prefix")
      no_value(), cfg.prefix_output = false;
    else if (name == "--keep-going")
      no_value(), cfg.keep_going = true;
    else if (name == "--max-restarts")
      cfg.max_restarts = parse_int(name, take());
    else if (name == "--ps") {
      cfg.num_ps = parse_int(name, take());
      if (cfg.num_ps < 1) throw UsageError("--ps must be at least 1, got " + std::to_string(cfg.num_ps));
    } else
      throw UsageError("unknown option " + a);
  }
  for (; i < args.size(); ++i) cfg.command.push_back(args[i]);
  validate(cfg, addr_given);
  return line;
}

}  // namespace anvil::distributed::launcher
